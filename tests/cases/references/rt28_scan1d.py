"""Inclusive prefix sum of a 1-D fp32 vector: out = torch.cumsum(x, 0)."""
import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def ref_kernel(x):
    return torch.cumsum(x, 0)


tests = [{"n": n} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
