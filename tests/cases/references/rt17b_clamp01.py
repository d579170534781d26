"""torch.clamp(x, lo, hi) with lo = 0.0 and hi = 1.0 as float arguments (red team rt17b, finding C; pairs with
tests/cases/kernels/rt17b_clamp01_good.py): clamping to [0, 1], as an image or a probability is. The scalars cases
move one float at a time, the others scaled by 0.5..2x: lo + 1.0 (new this round) = 1.0 above a hi scaled below 1,
or hi negated below lo = 0.0, gives lo > hi, where torch.clamp returns hi everywhere and the other honest order of
the two comparisons returns lo."""

import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g), 0.0, 1.0


def ref_kernel(data):
    x, lo, hi = data
    return torch.clamp(x, lo, hi)


tests = [{"n": 127}, {"n": 1025}]
fuzz = False
