"""BAD: raises inside custom_kernel."""


def custom_kernel(data):
    raise ValueError("boom: this kernel refuses to run")
