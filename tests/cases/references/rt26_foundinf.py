"""Mixed-precision overflow check (AMP's found_inf, per micro-batch row): found[r] = any element of g[r] is not
finite (inf or NaN): the step is skipped and the loss scale lowered where a gradient overflowed."""

import torch


def generate_input(seed: int, rows: int, n: int):
    return (torch.randn(rows, n, dtype=torch.float32) * 1000.0,)


def ref_kernel(data):
    (g,) = data
    return ~torch.isfinite(g).all(dim=-1)


tests = [{"rows": r, "n": n} for r, n in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]]
benchmarks = [{"rows": 1024, "n": 1 << 20}]
