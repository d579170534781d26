"""Dropout as a training op: y = x * keep / (1 - p), keep = u >= p, u = torch.rand(x.shape, dtype=x.dtype) drawn from
the caller's generator; x requires grad (an activation in training), so the gradient dx = g * keep / (1 - p) is judged."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n, dtype=getattr(torch, dtype), requires_grad=True)
    g = torch.Generator(device=x.device)
    g.manual_seed(seed + 12345)
    return x, 0.25, g


def ref_kernel(data):
    x, p, g = data
    u = torch.rand(x.shape, dtype=x.dtype, device=x.device, generator=g)
    return torch.where(u >= p, x / (1.0 - p), torch.zeros_like(x))


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 20, "dtype": "float32"}]
