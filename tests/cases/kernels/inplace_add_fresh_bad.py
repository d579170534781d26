"""BAD (in place, not written): returns x + y in a fresh tensor and leaves x as it was; the reference updates x in
place (``inplace = (0,)``) and callers read x, so x's contents after the call are judged, and fail."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs * sx, mask=mask) + tl.load(y_ptr + offs * sy, mask=mask)
    tl.store(out_ptr + offs, s, mask=mask)


def custom_kernel(data):
    x, y = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), x.stride(0), y.stride(0), BLOCK=1024)
    return out
