"""Vector add, plain: one element per thread (128-element blocks, 4 warps), the textbook first version."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, BLOCK=128)
    return out
