"""Masked attention-score softmax: out = softmax(scores.masked_fill(~mask, -inf), dim=-1), one (n, n) head.

The mask is an input (attention kernels take one); generate_input makes the causal one (lower triangle)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    scores = 3.0 * torch.randn(n, n, dtype=torch.float32)
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    return scores.to(getattr(torch, dtype)), mask


def ref_kernel(data):
    scores, mask = data
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


tests = [{"n": n, "dtype": dt} for n in (1, 31, 63, 65, 127, 129) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 4096, "dtype": "bfloat16"}]


def bytes_moved(n, dtype):
    return n * n * (2 * torch.empty(0, dtype=getattr(torch, dtype)).element_size() + 1)
