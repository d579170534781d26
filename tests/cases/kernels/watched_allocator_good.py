"""GOOD twin of watched_allocator_bad.py: keeps a reference to ``torch.empty`` taken at import (a common way to
save a lookup) and allocates with it; it computes every element."""

import torch
import triton
import triton.language as tl

_EMPTY = torch.empty


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = _EMPTY(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
