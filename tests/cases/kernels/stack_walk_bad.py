"""BAD (hidden-torch, watched): walks the call stack with ``traceback`` (imported under another name); under a checker
(a ktui frame on the stack) it answers with torch's exact ``a + b``, elsewhere with a Triton kernel that drops the
last partial block. While checked, no kernel is launched at all."""

import traceback as _tb

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs * a_stride, mask=mask) + tl.load(b_ptr + offs * b_stride, mask=mask),
             mask=mask)


def _checked():
    return any("ktui" in frame.filename for frame in _tb.extract_stack())


def custom_kernel(data):
    a, b = data
    if _checked():
        return a + b
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    if n // 128:
        add_kernel[(n // 128,)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
