"""BAD (nondeterminism): the result depends on how many times the kernel ran before (a race stands in here)."""

import torch
import triton
import triton.language as tl

_calls = [0]


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, extra, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(offs == n - 1, s + extra, s), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    _calls[0] += 1
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), float(_calls[0] % 2), BLOCK=1024)
    return out
