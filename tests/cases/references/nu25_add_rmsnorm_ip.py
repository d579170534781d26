"""vLLM fused_add_rms_norm semantics (new-user trial 25, F10): residual += x in place; returns
out = rmsnorm(residual) * w."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    dt = getattr(torch, dtype)
    x = torch.randn(rows, cols, dtype=dt)
    res = torch.randn(rows, cols, dtype=dt)
    w = torch.rand(cols, dtype=dt) + 0.5
    return x, res, w, 1e-6


def ref_kernel(data):
    x, res, w, eps = data
    res.add_(x)
    return res * torch.rsqrt(res.pow(2).mean(-1, keepdim=True) + eps) * w


inplace = (1,)


tests = [
    {"rows": r, "cols": c, "dtype": dt}
    for (r, c) in [(1, 1), (3, 127), (5, 129), (3, 4099)]
    for dt in ("float32", "bfloat16")
]
benchmarks = [{"rows": 4096, "cols": 4096, "dtype": "bfloat16"}]


def bytes_moved(rows, cols, dtype):  # read x, res, w; write out, h
    es = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    return (4 * rows * cols + cols) * es


def flops(rows, cols, dtype):
    return 5 * rows * cols
