"""y = x + 1 of int8 values, widened to int16 first (so 127 + 1 is 128, not -128)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randint(-100, 100, (n,), dtype=torch.int8)


def ref_kernel(x):
    return x.to(torch.int16) + 1


tests = [{"n": n} for n in (1, 127, 129, 1025, 4099)]
