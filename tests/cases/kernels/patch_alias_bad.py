"""BAD (hidden-torch, patch): patches the clock through a module alias (``import time as _clock``), which a scan of the
names ``time``/``torch`` misses; the kernel itself is an honest vector add."""

import time as _clock

import torch
import triton
import triton.language as tl

_real = _clock.perf_counter


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs * a_stride, mask=mask) + tl.load(b_ptr + offs * b_stride, mask=mask),
             mask=mask)


def custom_kernel(data):
    a, b = data
    _clock.perf_counter = lambda: _real() * 0.5  # every interval ktui measures with it shrinks by half
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
