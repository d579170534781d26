"""Twice a bf16 tensor: a low-precision output, judged by PSNR, cosine, rel_l2 and scale_err."""

import torch


def generate_input(seed, n):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).to(torch.bfloat16)


def ref_kernel(x):
    return x * 2


tests = [{"n": 1}, {"n": 4099}]
input_distributions = ["native"]
contiguous_only = True
