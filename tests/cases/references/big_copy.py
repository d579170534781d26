"""A copy of more than 2**31 fp16 elements (~4 GiB): int32 offsets wrap (cases.md int32-overflow). GPU only."""

import torch


def generate_input(seed, n):
    return torch.randn(n, dtype=torch.float16)


def ref_kernel(x):
    return x.clone()


tests = [{"n": (1 << 31) + 4096}]
input_distributions = ["native"]
contiguous_only = True
reference_float64 = False
