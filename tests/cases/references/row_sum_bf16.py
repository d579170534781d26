"""Row sums of bf16 rows of 512: with constant inputs (ones) the right answer is 512; a bf16 accumulator stalls at
256 (cases.md bf16-accum)."""

import torch


def generate_input(seed, rows, cols):
    return torch.randn(rows, cols).to(torch.bfloat16)


def ref_kernel(x):
    return x.sum(dim=-1)


tests = [{"rows": 1, "cols": 512}]  # one row: 512 steps a call under the interpreter
input_distributions = ["native", "constant"]  # ones are what shows the stall; the interpreter runs this slowly
contiguous_only = True
# the case is the constant distribution on this spec; the kernels add one element a step (1.4 s a call under the
# interpreter), and the fuzzed specs (up to 64 rows of 2,048) would take minutes of it
fuzz = False
