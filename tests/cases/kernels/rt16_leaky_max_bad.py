"""BAD (scalars, red team round 16 M4): Leaky ReLU as max(x, slope * x): one instruction fewer than a select, and the same result for 0 <= slope <= 1.

Wrong for slope > 1 (gives x where x < 0 ... and slope * x where x > 0) or slope < 0: the reference takes any
slope; the checks only ever scale 0.2 by 0.5..2x."""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, out_ptr, slope, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m).to(tl.float32)
    y = tl.maximum(x, slope * x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, slope = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    leaky_kernel[(triton.cdiv(n, 1024),)](x, out, slope, n, x.stride(0), BLOCK=1024)
    return out
