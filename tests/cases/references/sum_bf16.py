"""The sum of a bf16 vector as a 0-d bf16 tensor (what ``x.sum()`` returns): the shape an honest reduction over
more than 2^31 elements returns too, which ktui must carry to the judge and judge like any other output."""

import torch


def generate_input(seed, n):
    return torch.randn(n).to(torch.bfloat16)


def ref_kernel(x):
    return x.sum()


tests = [{"n": n} for n in (1, 127, 129, 1025, 4099)]
input_distributions = ["native", "constant"]
contiguous_only = True
