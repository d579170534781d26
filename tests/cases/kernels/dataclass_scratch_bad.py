"""BAD (input-mutation inside a dataclass): computes x * scale + y right, then uses the middle of data.y as
scratch, where a shortened repr of the tensor (first and last three elements) never looks."""

import triton
import triton.language as tl


@triton.jit
def fma(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) * scale + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, v, mask=mask)
    inner = mask & (offs >= 3) & (offs < n - 3)
    tl.store(y_ptr + offs, v, mask=inner)  # scratch: the "last use" of y


def custom_kernel(data):
    out = data.x.new_empty(data.x.shape)
    n = data.x.numel()
    fma[(triton.cdiv(n, 1024),)](data.x, data.y, out, n, data.scale, BLOCK=1024)
    return out
