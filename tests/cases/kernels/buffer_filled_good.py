"""The honest twin of buffer_ignored_bad: a + b written into the declared buffer `out`, which it returns."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b, out = data
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), a.stride(0), b.stride(0), BLOCK=1024)
    return out
