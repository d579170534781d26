"""Vector add with two sizes in the order (512, 4096) (cases.md stale-cache)."""

import torch


def generate_input(seed, n):
    return torch.randn(n), torch.randn(n)


def ref_kernel(data):
    a, b = data
    return a + b


tests = [{"n": n} for n in (512, 4096)]
input_distributions = ["native", "uniform"]
contiguous_only = True
