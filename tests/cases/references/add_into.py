"""out = a + b into a declared output buffer (``outputs``): an in-place kernel writes ``out`` and returns it."""

import torch


def generate_input(seed: int, n: int):
    a = torch.randn(n, dtype=torch.float32)
    b = torch.randn(n, dtype=torch.float32)
    return a, b, torch.empty(n, dtype=torch.float32)


def ref_kernel(data):
    a, b, _ = data
    return a + b


tests = [{"n": n} for n in (1, 129, 1025, 4099)]
outputs = (2,)
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}
