"""Row sums in float32: out[r] = sum_c x[r, c]."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return (torch.randn(rows, cols, dtype=torch.float32),)


def ref_kernel(data):
    (x,) = data
    return x.sum(dim=-1)


tests = [{"rows": r, "cols": c} for r, c in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]]
benchmarks = [{"rows": 8192, "cols": 8192}]


def bytes_moved(rows: int, cols: int) -> int:
    return 4 * rows * cols + 4 * rows
