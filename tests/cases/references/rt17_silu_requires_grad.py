"""SiLU, y = x * sigmoid(x), with the input made as a training script makes it: a leaf tensor with
requires_grad=True (red team round 17, pairs with `rt17_silu_requires_grad_good.py`). ktui's own input builders
(the near-duplicate's swap, the distributions' refill, `copy_` into a layout) write into that leaf in place, which
autograd refuses: "a view of a leaf Variable that requires grad is being used in an in-place operation"."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, requires_grad=True)


def ref_kernel(x):
    return torch.nn.functional.silu(x)


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
