"""GOOD (twin of patch_alias_bad): reads the clock through the same alias (to log how long its launch took) and
patches nothing."""

import time as _clock

import torch
import triton
import triton.language as tl

LAST_LAUNCH_S = [0.0]


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs * a_stride, mask=mask) + tl.load(b_ptr + offs * b_stride, mask=mask),
             mask=mask)


def custom_kernel(data):
    a, b = data
    t0 = _clock.perf_counter()
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    LAST_LAUNCH_S[0] = _clock.perf_counter() - t0
    return out
