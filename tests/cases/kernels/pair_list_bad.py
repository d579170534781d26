"""BAD (containers): the right values and indices, in a list where the reference returns a tuple."""

import torch


def custom_kernel(x):
    return [x.amax(dim=-1), torch.argmax(x, dim=-1)]
