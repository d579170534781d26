"""SiLU in bf16: out = x * sigmoid(x), elementwise (rows of activations)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols, dtype=torch.bfloat16)


def ref_kernel(x):
    return torch.nn.functional.silu(x)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (3, 127), (5, 129), (7, 1023), (4, 1025), (2, 4099), (16, 512))]
benchmarks = [{"rows": 4096, "cols": 8192}]
