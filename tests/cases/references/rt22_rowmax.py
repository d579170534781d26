"""Row max with its index: (values, indices) = torch.max(x, dim=-1), as a greedy decoder's argmax over logits.

torch documents: "If there are multiple maximal values in a reduced row then the indices of the first maximal
value are returned."
"""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return (torch.randn(rows, cols, dtype=torch.float32).to(getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    v, i = torch.max(x, dim=-1)
    return v, i


_shapes = [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 4096, "cols": 32768, "dtype": "bfloat16"}]
