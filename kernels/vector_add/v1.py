"""Vector add, plain: one element per thread (128-element blocks, 4 warps), the textbook first version."""

import torch
import triton
import triton.language as tl

import ktui.trace.triton as kt  # region markers for the trace rung: no-ops in every other build


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    with kt.region("add"):
        a = tl.load(a_ptr + offs * a_stride, mask=mask)
        b = tl.load(b_ptr + offs * b_stride, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)  # contiguous whatever a's layout
    n = a.numel()
    add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
