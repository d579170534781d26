"""Honest reference: the indices of the outliers of x (|x| > 2.5), int64, ascending. The output size depends on the
values (as torch.nonzero's does)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x):
    return torch.nonzero(x.abs() > 2.5).flatten()


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 200_003)]
benchmarks = [{"n": 1 << 24}]
fuzz = False
