"""WRONG (red team round 22, F9): y = 2 x into the caller's buffer, writing element 0 only (its mask is offs < 1); the
reference returned nothing, so nothing was judged and it passed. ktui now refuses a reference that fills a declared
buffer without returning it."""

import triton
import triton.language as tl


@triton.jit
def mul2_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < 1  # (bad: should be offs < n)
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * 2, mask=m)


def custom_kernel(data):
    x, out = data
    n = x.numel()
    mul2_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
