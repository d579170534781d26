"""Which elements are positive: a bool output (the poison of bool outputs: red team, round 4)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x):
    return x > 0


tests = [{"n": n} for n in (1, 127, 129, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
