"""Honest: x > 0 into a bool output, every element written."""

import torch
import triton
import triton.language as tl


@triton.jit
def positive_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x > 0, mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    positive_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), x.stride(0), BLOCK=256)
    return out
