"""Top-k of each row, unsorted: torch.topk(x, k, sorted=False), the form MoE routers and samplers use when the order
of the k picks does not matter (red team round 18, F1: a kernel returning them sorted failed)."""

import torch

TOPK = 4


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return torch.randn(rows, cols, dtype=getattr(torch, dtype))


def ref_kernel(x):
    k = min(TOPK, x.shape[-1])
    v, i = torch.topk(x, k, dim=-1, sorted=False)
    return v, i


tests = [
    {"rows": 3, "cols": 127, "dtype": "float32"},
    {"rows": 2, "cols": 4099, "dtype": "float32"},
    {"rows": 17, "cols": 64, "dtype": "bfloat16"},
]
benchmarks = [{"rows": 4096, "cols": 4096, "dtype": "bfloat16"}]
