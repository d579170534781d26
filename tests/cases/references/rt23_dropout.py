"""Dropout with an explicit generator: y = x * (u >= p) / (1 - p), u ~ U[0,1) drawn from the caller's generator.

The caller's generator is advanced by the draw (as torch.nn.functional.dropout advances its generator), so two calls
with one generator draw two different masks."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n, dtype=getattr(torch, dtype))
    g = torch.Generator(device=x.device)
    g.manual_seed(seed + 12345)
    return x, 0.25, g


def ref_kernel(data):
    x, p, g = data
    u = torch.rand(x.shape, generator=g, device=x.device, dtype=torch.float32)
    keep = u >= p
    return torch.where(keep, x / (1.0 - p), torch.zeros_like(x))


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24, "dtype": "float32"}]
allow_torch = False
