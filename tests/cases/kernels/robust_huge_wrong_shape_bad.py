"""BAD (robust-huge-shape): returns a stride-0 view of one element expanded to 2^27 elements (512 MB if it were
materialized) instead of the vector of n sums: the shape alone says it is wrong, so ktui must say so at once, without
writing half a gigabyte per case into shared memory first."""


def custom_kernel(data):
    a, b = data
    return (a[:1] + b[:1]).expand(1 << 27)
