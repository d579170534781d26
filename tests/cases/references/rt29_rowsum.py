"""Row sums of a wide fp32 matrix: out[r] = sum_c x[r, c] (a split-K style reduction target)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols, dtype=torch.float32)


def ref_kernel(x):
    return x.sum(dim=-1)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (3, 127), (5, 1025), (2, 4099), (7, 2048))]
benchmarks = [{"rows": 64, "cols": 1 << 20}]
