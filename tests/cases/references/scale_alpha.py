"""x * alpha, alpha a Python float argument that generate_input always makes 2.5 (the README's example)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype)), 2.5


def ref_kernel(data):
    x, alpha = data
    return x * alpha


tests = [{"n": n, "dtype": dt} for n in (1, 127, 129, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 28, "dtype": "float32"}]

tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}


def bytes_moved(n, dtype):
    return 2 * n * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
