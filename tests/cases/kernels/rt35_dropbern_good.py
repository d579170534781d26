"""Honest (red team round 35, #1, a false alarm: the float64 truth drew float64 uniforms): dropout: the uniforms drawn as the reference draws them, the mask applied in Triton."""

import torch
import triton
import triton.language as tl


@triton.jit
def apply_kernel(x_ptr, u_ptr, out_ptr, keep_ptr, n, stride, p, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m)
    u = tl.load(u_ptr + offs, mask=m)
    keep = u != 0.0
    tl.store(out_ptr + offs, tl.where(keep, x * scale, 0.0), mask=m)
    tl.store(keep_ptr + offs, keep, mask=m)


def custom_kernel(data):
    x, p, g = data
    u = torch.bernoulli(torch.full_like(x, 1.0 - p), generator=g)  # 1.0 keep, 0.0 drop
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    keep = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    n = x.numel()
    apply_kernel[(triton.cdiv(n, 1024),)](x, u, out, keep, n, x.stride(0), p, 1.0 / (1.0 - p), BLOCK=1024)
    return out, keep
