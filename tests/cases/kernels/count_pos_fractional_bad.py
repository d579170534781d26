"""BAD (integer outputs): a float that is not an integer, where an integer count is expected (it must not be
truncated into the right answer)."""


def custom_kernel(x):
    return float((x > 0).sum()) + 0.9
