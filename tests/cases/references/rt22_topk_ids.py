"""A router's expert choice: the ids of the k largest scores of each row, torch.topk(x, k).indices (sorted, values
not returned; ties in any order, as torch.topk documents none)."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return torch.randn(rows, cols, dtype=torch.float32).to(getattr(torch, dtype)), 8


def ref_kernel(data):
    x, k = data
    return torch.topk(x, k, dim=-1).indices


_shapes = [(1, 129), (7, 127), (33, 16)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 16384, "cols": 256, "dtype": "bfloat16"}]
fuzz = {"rows": (1, 8), "cols": (16, 300)}  # (kept small: the interpreter runs k rounds over a whole row)
