"""BAD (unwritten): writes only the even elements; the odd ones keep whatever the memory held."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_even(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (offs % 2 == 0)
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    add_even[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
