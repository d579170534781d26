"""BAD: does not parse."""

def custom_kernel(data)
    return data
