"""Two outputs from one pass (red team round 34, #2): y = 2x and each row's sum of squares (a norm's statistic, kept
for the backward). On the extreme family's values near float32's max the sum of squares overflows in float32 (the
native reference is no bar there), while y stays exact."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols, dtype=torch.float32)


def ref_kernel(x):
    return 2 * x, (x * x).sum(-1)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (7, 129), (64, 64))]
benchmarks = [{"rows": 4096, "cols": 4096}]
input_distributions = ["native", "normal", "extreme"]
