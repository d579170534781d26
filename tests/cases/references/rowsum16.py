"""Row sums of fp16 rows, fp16 out (a reduction as it appears in every fp16 model: logits sums, norms)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols, dtype=torch.float32).to(torch.float16)


def ref_kernel(x):
    return x.sum(dim=-1)


tests = [{"rows": r, "cols": c} for r, c in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]]
benchmarks = [{"rows": 8192, "cols": 8192}]
