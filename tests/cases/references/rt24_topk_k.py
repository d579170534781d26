"""Top-k values of each row, largest first; k is an argument in the data (8 as generated), not a spec field."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return torch.randn(rows, cols, dtype=getattr(torch, dtype)), 8


def ref_kernel(data) -> torch.Tensor:
    x, k = data
    return torch.topk(x, k, dim=-1).values


_shapes = [(1, 9), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 4096, "cols": 4096, "dtype": "float32"}]
fuzz = {"rows": (1, 512), "cols": (9, 8192)}
