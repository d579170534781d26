"""BAD (result-reuse): computes nothing and returns fresh memory, hoping it still holds the reference's answer."""

import torch


def custom_kernel(data):
    a, b = data
    return torch.empty_like(a)
