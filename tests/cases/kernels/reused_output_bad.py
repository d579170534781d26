"""BAD (reused-output): keeps one output buffer and returns it from every call. Each answer is right when the call
returns, but the next call overwrites memory the caller still holds."""

import torch
import triton
import triton.language as tl

_BUF = {}


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    key = (tuple(a.shape), a.dtype)
    if key not in _BUF:
        _BUF[key] = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    out = _BUF[key]
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
