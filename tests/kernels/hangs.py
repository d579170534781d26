"""BAD: never returns."""


def custom_kernel(data):
    while True:
        pass
