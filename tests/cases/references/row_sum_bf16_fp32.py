"""Row sums of bf16 rows returned in fp32 (as a matmul with an fp32 accumulator and output): an fp32 output from
low-precision inputs, judged by fp32's rules (red team: "an fp32 output computed from a bf16 input is judged by
bf16 rules")."""

import torch


def generate_input(seed, rows, cols):
    return torch.randn(rows, cols).to(torch.bfloat16)


def ref_kernel(x):
    return x.to(torch.promote_types(x.dtype, torch.float32)).sum(dim=-1)  # fp32, or float64 for the truth


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (3, 129), (4, 1025), (2, 4099))]
input_distributions = ["native", "normal", "shifted"]
contiguous_only = True
