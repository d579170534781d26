"""Honest twin of rt16_leaky_max_bad.py: leaky ReLU as a select, right for any slope."""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, out_ptr, slope, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m).to(tl.float32)
    y = tl.where(x >= 0, x, slope * x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, slope = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    leaky_kernel[(triton.cdiv(n, 1024),)](x, out, slope, n, x.stride(0), BLOCK=1024)
    return out
