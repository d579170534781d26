"""RMSNorm with a learned weight (red team round 18 W3): y = x / sqrt(mean(x^2) + eps) * w, rows of fp32, w fp32."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    w = 1.0 + 0.1 * torch.randn(cols, generator=g)
    return x, w, 1e-6


def ref_kernel(data):
    x, w, eps = data
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


tests = [{"rows": r, "cols": c} for r, c in [(1, 1), (7, 127), (3, 1025)]]
benchmarks = [{"rows": 64, "cols": 1024}]
