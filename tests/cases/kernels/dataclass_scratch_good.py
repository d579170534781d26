"""The honest twin of dataclass_scratch_bad: x * scale + y from a dataclass's tensors, the inputs left alone."""

import triton
import triton.language as tl


@triton.jit
def fma(x_ptr, y_ptr, out_ptr, n, scale, x_stride, y_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs * x_stride, mask=mask) * scale + tl.load(y_ptr + offs * y_stride, mask=mask)
    tl.store(out_ptr + offs, v, mask=mask)


def custom_kernel(data):
    out = data.x.new_empty(data.x.shape)
    n = data.x.numel()
    fma[(triton.cdiv(n, 1024),)](data.x, data.y, out, n, data.scale, data.x.stride(0), data.y.stride(0), BLOCK=1024)
    return out
