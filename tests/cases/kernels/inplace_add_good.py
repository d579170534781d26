"""GOOD (in place, declared): x += y written into x through its strides, x returned (GPU MODE's read-modify-write);
the reference declares ``inplace = (0,)``. Without that declaration it failed "input modified"."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask)
    tl.store(x_ptr + offs * sx, s, mask=mask)


def custom_kernel(data):
    x, y = data
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), x.stride(0), y.stride(0), BLOCK=1024)
    return x
