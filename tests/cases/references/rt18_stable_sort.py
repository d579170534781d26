"""Stable row sort (ascending; red team round 18 W1) of scores, values and the permutation: torch.sort(x, dim=-1, stable=True). Stability is
part of the contract: equal scores keep their input order (callers reorder payloads by the permutation and rely on
it, e.g. tokens grouped by a bucketed score keep their sequence order)."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return torch.randn(rows, cols, dtype=getattr(torch, dtype))


def ref_kernel(x):
    v, i = torch.sort(x, dim=-1, stable=True)
    return v, i


_shapes = [(1, 1), (3, 127), (2, 257)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 4096, "cols": 1024, "dtype": "bfloat16"}]
fuzz = {"rows": (1, 4096), "cols": (1, 1024)}  # rows of at most 1024 scores (and the tests)
