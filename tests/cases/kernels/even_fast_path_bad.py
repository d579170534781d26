"""shape-class: vector add with a "vec4" fast path taken when n % 4 == 0, which handles one group of 4 too few (the
last four elements are never written). Every test size of vector_add is odd, so only a fuzzed size shows it."""

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


@triton.jit
def add4_kernel(a_ptr, b_ptr, out_ptr, groups, a_stride, b_stride, BLOCK: tl.constexpr):
    g = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = (g[:, None] * 4 + tl.arange(0, 4)[None, :])
    mask = g[:, None] < groups
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    if n % 4 == 0 and n:
        groups = n // 4 - 1  # the bug: one group short
        add4_kernel[(triton.cdiv(max(groups, 1), 256),)](a, b, out, groups, a.stride(0), b.stride(0), BLOCK=256)
    else:
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
