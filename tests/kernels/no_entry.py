"""BAD: forgot custom_kernel."""


def kernel(data):
    return data
