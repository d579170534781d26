"""BAD (hidden-torch, side stream): ``from torch.cuda import Stream, stream`` and the launch on a side stream, which
CUDA events on the current stream do not time; names alone (``torch.cuda.Stream``) are not in the source."""

import torch
import triton
import triton.language as tl
from torch.cuda import Stream, stream


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs * a_stride, mask=mask) + tl.load(b_ptr + offs * b_stride, mask=mask),
             mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    if a.is_cuda:
        side = Stream()
        with stream(side):
            add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
        side.synchronize()
    else:
        add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
