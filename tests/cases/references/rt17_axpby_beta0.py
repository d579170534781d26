"""BLAS axpby, out = alpha * x + beta * y, with cuBLAS's usual beta = 0.0 as a Python float argument
(red team round 17, pairs with `rt17_axpby_beta0_bad.py`). The scalars cases scale a float by 0.5..2x, negate it or
multiply it by 8: each leaves 0.0 at 0.0, so beta is never varied, and no note says so."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n), torch.randn(n), 1.5, 0.0


def ref_kernel(data):
    x, y, alpha, beta = data
    return alpha * x + beta * y


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]
