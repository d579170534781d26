"""GOOD (twin of operator_module_bad): vector add in Triton at every size; ``operator`` only on Python ints (the
grid) and to unpack the data, which is not torch compute."""

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
    a, b = op.itemgetter(0, 1)(data)
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(op.add(triton.cdiv(n, 128), 0),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
