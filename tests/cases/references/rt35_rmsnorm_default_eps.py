"""RMSNorm as torch.nn.RMSNorm computes it by default: y = x / sqrt(mean(x^2) + eps) * w, eps left at its default
(torch.finfo(x.dtype).eps)."""

import torch
import torch.nn.functional as F


def generate_input(seed: int, rows: int, cols: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    w = 1.0 + 0.1 * torch.randn(cols, generator=g)
    return x, w


def ref_kernel(data):
    x, w = data
    return F.rms_norm(x, (x.shape[-1],), w)


tests = [{"rows": r, "cols": c} for r, c in ((1, 127), (7, 257), (33, 1025), (200, 64))]
benchmarks = [{"rows": 8192, "cols": 4096}]
