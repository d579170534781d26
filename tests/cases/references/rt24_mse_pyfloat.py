"""Mean squared error of two bf16 tensors, accumulated in float32 and returned as a Python float (a loss value that
a training loop logs: ``loss.item()``)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    x = torch.randn(rows, cols, dtype=torch.bfloat16)
    t = torch.randn(rows, cols, dtype=torch.bfloat16)
    return x, t


def ref_kernel(data) -> float:
    x, t = data
    return torch.mean((x.float() - t.float()) ** 2).item()


_shapes = [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]
tests = [{"rows": r, "cols": c} for r, c in _shapes]
benchmarks = [{"rows": 8192, "cols": 8192}]
