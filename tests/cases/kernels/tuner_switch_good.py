"""GOOD twin of tuner_switch_bad.py: the same hand-made tuner, which switches after 16 calls of a shape to another
block size that is right too."""

import torch
import triton
import triton.language as tl

WARM = 16
_CALLS: dict[tuple, int] = {}


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
    key = (tuple(a.shape), a.dtype, str(a.device))
    _CALLS[key] = _CALLS.get(key, 0) + 1
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    block = 256 if _CALLS[key] > WARM else 1024
    add_kernel[(triton.cdiv(n, block),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=block)
    return out
