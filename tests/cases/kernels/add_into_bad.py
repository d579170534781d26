"""BAD (input-mutation with a declared output buffer): writes a + b into ``out`` (declared) and also into ``a`` (an
input): the output buffer is fine, the input is not."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, s, mask=mask)
    tl.store(a_ptr + offs, s, mask=mask)


def custom_kernel(data):
    a, b, out = data
    a, b = a.contiguous(), b.contiguous()
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
