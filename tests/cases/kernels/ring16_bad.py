"""BAD (call-count window): hands out its outputs from a ring of 16 buffers per shape. Each answer is right when
the call returns, and no shape is called more than 12 times in ktui's other cases, but the 17th call overwrites the
output of the first, which its caller still holds. ``AT_LEAST`` is the smallest size it does this at (1: always;
the GPU twin ``ring16_bench_bad.py`` does it at the benchmark's size only)."""

import torch
import triton
import triton.language as tl

AT_LEAST = 1
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


def custom_kernel(data):
    a, b = data
    n = a.numel()
    if n >= AT_LEAST:
        key = (tuple(a.shape), a.dtype, str(a.device))
        ring = _RINGS.setdefault(key, [])
        calls = _CALLS.get(key, 0)
        _CALLS[key] = calls + 1
        if len(ring) < RING:
            ring.append(torch.empty(a.shape, dtype=a.dtype, device=a.device))
        out = ring[calls % RING]
    else:
        out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
