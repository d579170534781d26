"""Row softmax in float32, the reference as `ktui init` leaves it: no tolerance of its own (ktui's defaults).

A caller takes log(p) (cross-entropy, KL) or samples from p, so every probability matters, small ones included.
"""

import torch


def generate_input(seed: int, rows: int, cols: int) -> torch.Tensor:
    return 3.0 * torch.randn(rows, cols, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


tests = [{"rows": r, "cols": c} for r, c in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]]
benchmarks = [{"rows": 8192, "cols": 8192}]


def bytes_moved(rows: int, cols: int) -> int:
    return 8 * rows * cols
