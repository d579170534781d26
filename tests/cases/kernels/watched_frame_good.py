"""GOOD twin of watched_frame_bad.py: walks its stack the same way (to name its caller, say) and computes every
element whatever it finds."""

import inspect

import torch
import triton
import triton.language as tl

SEEN: list[str] = []


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    SEEN[:] = [f.function for f in inspect.stack(context=0)][:4]
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
