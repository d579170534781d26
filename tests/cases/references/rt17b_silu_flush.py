"""SiLU on bfloat16 inputs and outputs (red team rt17b, finding A; pairs with
tests/cases/kernels/rt17b_silu_flush_bad.py). The ``extreme`` distribution holds 5% small normal numbers (every
binade from bf16's tiny to its eps) exactly so that a kernel which zeroes every value below a threshold fails; the
bf16 off rule's new floor, 2**-24 * rms(ref) (``accumulator.FLOAT32_U``), is taken over an output whose RMS is set by
the 0.5% of elements at max/8 (rms ~ 3e36, floor ~ 2e29), so no element of ordinary size can be off there."""

import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).to(torch.bfloat16)


def ref_kernel(x):
    return torch.nn.functional.silu(x)


tests = [{"n": 1}, {"n": 127}, {"n": 4099}]
fuzz = False
