"""x * 2 with a float argument of 0.0 the reference never reads (red team round 17, W1): no move changes the output,
so the run rung names it (a float no scaling changes either)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n), 0.0


def ref_kernel(data):
    x, _unused = data
    return x * 2


tests = [{"n": 5}, {"n": 129}]
