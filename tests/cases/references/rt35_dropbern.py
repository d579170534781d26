"""Dropout returning its keep mask, the mask drawn with torch.bernoulli(full_like(x, 1 - p), generator=g)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n, dtype=getattr(torch, dtype))
    g = torch.Generator(device=x.device)
    g.manual_seed(seed + 12345)
    return x, 0.25, g


def ref_kernel(data):
    x, p, g = data
    keep = torch.bernoulli(torch.full_like(x, 1.0 - p), generator=g).bool()
    return torch.where(keep, x / (1.0 - p), torch.zeros_like(x)), keep


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 1025)]
benchmarks = [{"n": 1 << 20, "dtype": "float32"}]
