"""In-place residual update (GPU MODE's read-modify-write): x += y, x returned."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32), torch.randn(n, dtype=torch.float32)


def ref_kernel(data):
    x, y = data
    x += y
    return x


inplace = (0,)
tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 65_537)]
benchmarks = [{"n": 1 << 26}]
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}
