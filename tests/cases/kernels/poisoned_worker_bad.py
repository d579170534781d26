"""BAD (poisoned-worker): patches torch so that every difference is zero, then returns zeros. A checker that
computes its verdict in this process would now pass everything, this version and the next ones."""

import torch

torch.Tensor.__sub__ = lambda self, other: torch.zeros_like(self)
torch.allclose = lambda *args, **kwargs: True


def custom_kernel(data):
    a, b = data
    return torch.zeros_like(a)
