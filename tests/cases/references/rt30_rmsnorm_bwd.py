"""RMSNorm backward: y = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps); given dy, return (dx, dw)."""

import torch


def generate_input(seed: int, m: int, n: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g)
    w = 1.0 + 0.1 * torch.randn(n, generator=g)
    dy = torch.randn(m, n, generator=g)
    return x, w, dy, 1e-6


def ref_kernel(data):
    x, w, dy, eps = data
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    xhat = x * rstd
    g = dy * w
    dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
    dw = (dy * xhat).sum(0)
    return dx, dw


tests = [{"m": m, "n": n} for m, n in ((1, 64), (7, 127), (33, 256), (64, 1000), (130, 512), (257, 96))]
benchmarks = [{"m": 16384, "n": 4096}]
fuzz = {"m": (1, 2048), "n": (1, 4096)}
