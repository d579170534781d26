"""Honest twin of the container cases: (values, indices) as a tuple, as the reference returns them."""

import torch


def custom_kernel(x):
    values = x.amax(dim=-1)
    indices = torch.argmax(x, dim=-1)
    return values, indices
