"""GOOD twin of ring16_bad.py: the same ring of 16 buffers per shape, used as scratch only; every call returns
memory of its own (the scratch is copied into a fresh output), so a buffer reused inside the kernel is never one the
caller holds."""

import torch
import triton
import triton.language as tl

RING = 16
_RINGS: dict[tuple, list[torch.Tensor]] = {}
_CALLS: dict[tuple, int] = {}


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    key = (tuple(a.shape), a.dtype, str(a.device))
    ring = _RINGS.setdefault(key, [])
    calls = _CALLS.get(key, 0)
    _CALLS[key] = calls + 1
    if len(ring) < RING:
        ring.append(torch.empty(a.shape, dtype=a.dtype, device=a.device))
    scratch = ring[calls % RING]
    add_kernel[(triton.cdiv(n, 1024),)](a, b, scratch, n, a.stride(0), b.stride(0), BLOCK=1024)
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    copy_kernel[(triton.cdiv(n, 1024),)](scratch, out, n, BLOCK=1024)
    return out
