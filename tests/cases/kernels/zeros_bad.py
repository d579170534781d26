"""BAD (zeros-pass): returns zeros; every true value is below the loose atol."""

import torch


def custom_kernel(x):
    return torch.zeros_like(x)
