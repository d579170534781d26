"""x += y, in place (GPU MODE's read-modify-write): the reference updates its input x and returns it; ``inplace =
(0,)`` says so, and x's contents after the call are judged as an output. A write into y still fails."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32), torch.randn(n, dtype=torch.float32)


def ref_kernel(data):
    x, y = data
    x += y
    return x


tests = [{"n": n} for n in (1, 129, 1025, 4099)]
inplace = (0,)
