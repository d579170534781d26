"""BAD (stale-cache): the launch size is cached by dtype, so a larger second shape gets the first shape's size."""

import torch
import triton
import triton.language as tl

_sizes = {}


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n = min(_sizes.setdefault(a.dtype, a.numel()), a.numel())  # BUG: keyed by dtype, not by shape
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out
