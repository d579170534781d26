"""Red team round 10: powi: out = x ** p for an integer exponent p that generate_input passes (an argument, not a
spec field)."""
import torch


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype)), 3


def ref_kernel(data):
    x, p = data
    return x**p


tests = [{"n": n, "dtype": dt} for n in (1, 127, 129, 1023, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "float32"}]


def bytes_moved(n, dtype):
    return 2 * n * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
