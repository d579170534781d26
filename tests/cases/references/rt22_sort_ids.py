"""MoE token grouping: sort each row of expert ids, returning (sorted ids, the permutation), torch.sort's default
(stable=False: ties in any order)."""

import torch


def generate_input(seed: int, rows: int, n: int, experts: int):
    return (torch.randint(0, experts, (rows, n), dtype=torch.int32),)


def ref_kernel(data):
    (ids,) = data
    v, i = torch.sort(ids, dim=-1)
    return v, i


tests = [{"rows": r, "n": n, "experts": 8} for r, n in [(1, 1), (1, 129), (7, 127), (2, 257)]]
benchmarks = [{"rows": 1, "n": 1 << 16, "experts": 64}]
fuzz = {"rows": (1, 4), "n": (1, 300)}
