"""BAD (input range): softmax without subtracting the row max: exp() overflows for logits above ~88 and underflows
to 0 / 0 far below zero."""

import torch


def custom_kernel(x):
    e = torch.exp(x.float())
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
