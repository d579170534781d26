"""Row sums of fp32 rows: what a split reduction (partial sums over column chunks, then their sum) computes."""

import torch


def generate_input(seed, rows, cols):
    return torch.randn(rows, cols)


def ref_kernel(x):
    return x.sum(dim=-1)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (3, 129), (4, 1000), (2, 4099))]
input_distributions = ["native", "normal"]
contiguous_only = True
