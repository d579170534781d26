"""BAD (vector-tail): processes the vector in groups of 4 and drops the remainder."""

import torch
import triton
import triton.language as tl


@triton.jit
def add4(a_ptr, b_ptr, out_ptr, n4, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n4
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n4 = (a.numel() // 4) * 4  # BUG: the last n % 4 elements are never written
    add4[(triton.cdiv(max(n4, 1), 1024),)](a, b, out, n4, BLOCK=1024)
    return out
