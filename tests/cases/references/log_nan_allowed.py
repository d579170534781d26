"""log of normal inputs: NaN wherever the input is negative. A reference that yields NaN is invalid unless it says
NaN is a valid result (cases.md nan-wildcard)."""

import torch


def generate_input(seed, n):
    return torch.randn(n)


def ref_kernel(x):
    return torch.log(x)


tests = [{"n": n} for n in (1, 129, 1025)]
input_distributions = ["native"]
contiguous_only = True
allow_nan = True
