"""Row softmax whose tests list an empty row (cols = 0) and an empty batch (rows = 0): torch returns an empty output,
and a kernel must too (new-user trial 31, F4)."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str) -> torch.Tensor:
    return 3.0 * torch.randn(rows, cols, dtype=getattr(torch, dtype))


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


tests = [{"rows": r, "cols": c, "dtype": "float32"} for r, c in [(1, 1), (7, 127), (3, 1025), (4, 0), (0, 33)]]
benchmarks = [{"rows": 4096, "cols": 4096, "dtype": "float32"}]


def bytes_moved(rows: int, cols: int, dtype: str) -> int:
    return 8 * rows * cols
