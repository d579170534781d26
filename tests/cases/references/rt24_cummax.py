"""Running maximum along rows with its indices (torch.cummax): values, and for each position i the index of the
maximum of x[:i+1] (torch takes the last of equal maxima, an index <= i)."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str) -> torch.Tensor:
    return torch.randn(rows, cols, dtype=getattr(torch, dtype))


def ref_kernel(x: torch.Tensor):
    v, i = torch.cummax(x, dim=-1)
    return v, i


# small rows: the interpreter runs tl.associative_scan one element at a time
_shapes = [(1, 1), (1, 129), (7, 127), (5, 257), (2, 131), (33, 64)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 64, "cols": 256, "dtype": "float32"}]
fuzz = {"rows": (1, 64), "cols": (1, 300)}
