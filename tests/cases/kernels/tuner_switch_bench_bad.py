"""BAD (call-count window, GPU): tuner_switch_bad.py at the benchmark's size only (2**27 elements and up), where
only timed calls run: correctness passes; after 16 calls every timed call is one element short, and the timed
calls' outputs ktui keeps are verified in full."""

import torch
import triton
import triton.language as tl

AT_LEAST = 1 << 27  # the benchmark spec is 2**28 elements; the test specs stay far below
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
    tuned = _CALLS[key] > WARM and n >= AT_LEAST
    upto = n - 1 if tuned else n  # the "tuned" kernel: one element short
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, upto, a.stride(0), b.stride(0), BLOCK=1024)
    return out
