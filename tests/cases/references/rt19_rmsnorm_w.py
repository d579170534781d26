"""RMSNorm with a learned weight: out = x / sqrt(mean(x^2) + eps) * w (fp32 rows) (red team round 19, W2 and W7)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    x = torch.randn(rows, cols, dtype=torch.float32)
    w = 1.0 + 0.1 * torch.randn(cols, dtype=torch.float32)
    return x, w, 1e-6


def ref_kernel(data):
    x, w, eps = data
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


tests = [{"rows": r, "cols": c} for r, c in ((3, 127), (2, 1025))]
benchmarks = [{"rows": 64, "cols": 1024}]
