"""y = 2 x + 1 (an elementwise op run many times in a row, as a training step calls it)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype))


def ref_kernel(x):
    return 2 * x + 1


tests = [{"n": n, "dtype": dt} for n in (1, 127, 129, 1023, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "bfloat16"}]
