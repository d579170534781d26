"""y = 2 x + 1 for a 2-D x (any layout), fp32 and bf16."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return (torch.randn(rows, cols, dtype=torch.float32).to(getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    return 2 * x + 1


_shapes = [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 8192, "cols": 8192, "dtype": "bfloat16"}]
