"""BAD (hidden-torch) unless the reference allows torch: a softmax that is torch's own, right to the last bit and
launching no kernel at all. Timing it times torch."""

import torch


def custom_kernel(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
