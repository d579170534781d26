"""BAD: returns a tensor one element short."""


def custom_kernel(data):
    a, b = data
    return (a + b)[:-1] if a.numel() > 1 else (a + b).reshape(1, 1)
