"""BAD twin of rt18_swiglu_none_good.py: returns (h, h) where the reference returns (h, None)."""

import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(x_ptr, out_ptr, n, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * sx0 + (offs + n) * sx1, mask=mask, other=0.0).to(tl.float32)
    h = g / (1.0 + tl.exp(-g)) * u
    tl.store(out_ptr + row * n + offs, h.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    rows, two_n = x.shape
    n = two_n // 2
    out = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    swiglu_kernel[(rows, triton.cdiv(n, 1024))](x, out, n, x.stride(0), x.stride(1), BLOCK=1024)
    return out, out
