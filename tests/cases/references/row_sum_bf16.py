"""Row sums of bf16 rows of 512: with constant inputs (ones) the right answer is 512; a bf16 accumulator stalls at
256 (cases.md bf16-accum)."""

import torch


def generate_input(seed, rows, cols):
    return torch.randn(rows, cols).to(torch.bfloat16)


def ref_kernel(x):
    return x.sum(dim=-1)


tests = [{"rows": 2, "cols": 512}]
input_distributions = ["native", "constant"]  # ones are what shows the stall; the interpreter runs this slowly
contiguous_only = True
