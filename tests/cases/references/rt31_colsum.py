"""Column sums of a tall fp32 matrix (a bias gradient: db = dy.sum(0))."""
import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols)


def ref_kernel(x):
    return x.sum(0)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (127, 33), (1025, 129), (4099, 64))]
benchmarks = [{"rows": 1 << 16, "cols": 4096}]
