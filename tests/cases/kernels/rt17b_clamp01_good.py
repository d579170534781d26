"""Honest (reference rt17b_clamp01.py): clamp(x, lo, hi) as max(min(x, hi), lo), right for every lo <= hi; where a
moved argument makes lo > hi it gives lo where torch.clamp gives hi (torch's documented choice: "If min is greater
than max, all elements are set to max"; neither order is wrong for the operation as stated)."""

import torch
import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, out_ptr, n, sx, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    y = tl.maximum(tl.minimum(x, hi), lo)
    tl.store(out_ptr + offs, y, mask=mask)


def custom_kernel(data):
    x, lo, hi = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    clamp_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), float(lo), float(hi), BLOCK=1024)
    return out
