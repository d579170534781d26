"""Honest twin of rt17_axpby_beta0_bad.py (reference rt17_axpby_beta0.py): alpha * x + beta * y for any beta."""

import torch
import triton
import triton.language as tl


@triton.jit
def axpby_kernel(x_ptr, y_ptr, out_ptr, alpha, beta, n, sx, sy, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    y = tl.load(y_ptr + offs * sy, mask=mask)
    tl.store(out_ptr + offs, alpha * x + beta * y, mask=mask)


def custom_kernel(data):
    x, y, alpha, beta = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    axpby_kernel[(triton.cdiv(n, 1024),)](x, y, out, alpha, beta, n, x.stride(0), y.stride(0), BLOCK=1024)
    return out
