"""BAD twin of copy_i8_good.py: the last element is never written (mask offs < n - 1)."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - 1
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=mask), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    return out
