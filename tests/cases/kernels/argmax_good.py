"""Honest twin of argmax_off_by_one_bad."""

import torch


def custom_kernel(x):
    return torch.argmax(x, dim=-1)
