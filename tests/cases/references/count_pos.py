"""How many elements are positive: a 0-d integer result, which a kernel may return as a Python int."""

import torch


def generate_input(seed, n):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def ref_kernel(x):
    return (x > 0).sum()


tests = [{"n": 1}, {"n": 129}]
input_distributions = ["native"]
contiguous_only = True

# The cases of this reference judge how outputs are compared, with versions written in torch: they may launch no
# Triton or CuTeDSL kernel (otherwise correctness fails them "times torch, not a kernel").
allow_torch = True
