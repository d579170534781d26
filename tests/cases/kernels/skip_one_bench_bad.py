"""BAD (GPU): skips one element of 2**28, the last, at the benchmark's size only (2**27 elements and up), where
only timed calls run. The old re-check sampled 4,096 elements of the last timed output and passed it; the timed
outputs ktui keeps are now verified in full, and the memory a timed call gets holds the poison."""

import torch
import triton
import triton.language as tl

AT_LEAST = 1 << 27


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
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    upto = n - 1 if n >= AT_LEAST else n
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, upto, a.stride(0), b.stride(0), BLOCK=1024)
    return out
