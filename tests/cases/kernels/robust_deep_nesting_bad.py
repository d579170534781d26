"""BAD (robust-nesting): returns the right sum nested in 10,000 one-element lists: ktui must fail it with a message
that names the case and the depth it allows, not with a bare RecursionError."""


def custom_kernel(data):
    a, b = data
    out = a + b
    for _ in range(10_000):
        out = [out]
    return out
