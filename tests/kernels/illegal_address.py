"""BAD (GPU): stores four terabytes past the end of the output: an illegal memory access."""

import torch
import triton
import triton.language as tl


@triton.jit
def bad_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + (1 << 40), 1.0, mask=offs < n)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    bad_kernel[(triton.cdiv(a.numel(), 1024),)](out, a.numel(), BLOCK=1024)
    return out
