"""GOOD (twin of stack_walk_bad): vector add in Triton whatever calls it; ``traceback`` only formats an exception of
its own launch for the message it raises, which reads no caller's frame."""

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


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    try:
        add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    except Exception as exc:
        raise RuntimeError(f"add_kernel failed: {_tb.format_exc(limit=2)}") from exc
    return out
