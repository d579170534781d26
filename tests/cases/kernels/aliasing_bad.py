"""BAD (aliasing): writes a + b into a and returns a: the output is an input."""

import triton
import triton.language as tl


@triton.jit
def add_into(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(a_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    add_into[(triton.cdiv(a.numel(), 1024),)](a, b, a.numel(), BLOCK=1024)
    return a
