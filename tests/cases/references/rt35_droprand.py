"""Dropout returning its keep mask: y = x * keep / (1 - p), keep = u >= p, u = torch.rand(x.shape, dtype=x.dtype)
drawn from the caller's generator (the uniforms in the input's own dtype, as most dropout references write it)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n, dtype=getattr(torch, dtype))
    g = torch.Generator(device=x.device)
    g.manual_seed(seed + 12345)
    return x, 0.25, g


def ref_kernel(data):
    x, p, g = data
    u = torch.rand(x.shape, dtype=x.dtype, device=x.device, generator=g)
    keep = u >= p
    return torch.where(keep, x / (1.0 - p), torch.zeros_like(x)), keep


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 1025)]
benchmarks = [{"n": 1 << 20, "dtype": "float32"}]
