"""The 0-d bf16 sum of more than 2^31 bf16 elements (4 GiB): what an honest reduction over a huge input returns,
which ktui must carry to the judge and judge (``self.dim() cannot be 0 to view BFloat16 as Byte`` before). GPU
only."""

import torch


def generate_input(seed, n):
    return torch.randn(n, dtype=torch.bfloat16)


def ref_kernel(x):
    return x.sum()


tests = [{"n": (1 << 31) + 4096}]
input_distributions = ["native"]
contiguous_only = True
fuzz = False
