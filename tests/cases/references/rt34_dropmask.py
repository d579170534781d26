"""Dropout that also returns its keep mask (for the backward): y = x * keep / (1 - p), keep = u >= p, u ~ U[0,1) drawn
in place into a float32 buffer from the caller's generator (red team round 34: its float64 truth drew another sequence)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n, dtype=getattr(torch, dtype))
    g = torch.Generator(device=x.device)
    g.manual_seed(seed + 12345)
    return x, 0.25, g


def ref_kernel(data):
    x, p, g = data
    u = torch.empty(x.shape, dtype=torch.float32, device=x.device).uniform_(generator=g)
    keep = u >= p
    return torch.where(keep, x / (1.0 - p), torch.zeros_like(x)), keep


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24, "dtype": "float32"}]
