"""The honest twin of powi_int_folded_bad.py: x ** p for the p it is given (repeated multiplication in fp32; a
negative p through 1 / x)."""

import torch
import triton
import triton.language as tl


@triton.jit
def powi_kernel(x_ptr, out_ptr, p, n, xs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * xs, mask=m, other=1.0).to(tl.float32)
    base = tl.where(p < 0, 1.0 / x, x)
    acc = tl.full([BLOCK], 1.0, tl.float32)
    for _ in range(0, tl.abs(p)):
        acc = acc * base
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, p = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    powi_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, p, x.numel(), x.stride(0), BLOCK=1024)
    return out
