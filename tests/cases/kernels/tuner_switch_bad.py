"""BAD (call-count window): a hand-made tuner. It runs the plain kernel for the first 16 calls of a shape, then
switches to its "tuned" one, which skips the last element. ktui's other cases call no shape more than 12 times.
``AT_LEAST`` is the smallest size it switches at (1: always; the GPU twin ``tuner_switch_bench_bad.py`` switches at
the benchmark's size only)."""

import torch
import triton
import triton.language as tl

AT_LEAST = 1
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
