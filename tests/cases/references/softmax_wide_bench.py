"""Row softmax in fp32 whose benchmark rows are far wider than every test's: 65,536 columns where the tests stop at
4099. A kernel with a separate path for rows past 32,768 columns is checked only if fuzzing reaches the benchmark's
width (red team: "wide path > 32768 columns uncaught")."""

import torch


def generate_input(seed, rows, cols):
    return 3.0 * torch.randn(rows, cols)


def ref_kernel(x):
    return torch.softmax(x, dim=-1)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099))]
benchmarks = [{"rows": 256, "cols": 65_536}]
input_distributions = ["native", "normal"]
contiguous_only = True
