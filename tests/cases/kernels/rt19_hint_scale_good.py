"""Honest twin of rt19_hint_contiguous_bad: out = x * alpha, no contiguity hint on strided offsets."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, x * alpha, mask=mask)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, alpha, n, x.stride(0) if n else 1, BLOCK=1024)
    return out
