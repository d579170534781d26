"""Honest, and more accurate than the reference: GELU as 0.5 x erfc(-x / sqrt 2) (reference gelu_tol.py), no
cancellation for x << 0. Below x = -8.3 torch's float64 truth is 0 (1 + erf cancels) where this gives -4e-23; bf16
outputs counted those as "off by 8 u |ref|" and failed (a new user's report)."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    y = 0.5 * x * libdevice.erfc(-x * 0.7071067811865476)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
