"""BAD (hidden-torch): above 4096 elements the sum is ``functools.reduce(op.add, data)``: torch through the
``operator`` module, under an alias. The specs above 4096 launch no kernel."""

import functools
import operator as op

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs * a_stride, mask=mask) + tl.load(b_ptr + offs * b_stride, mask=mask),
             mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    if n > 4096:
        return functools.reduce(op.add, data)
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
