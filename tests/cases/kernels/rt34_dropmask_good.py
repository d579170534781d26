"""Honest twin of rt34_dropmask_block0_bad.py (red team round 34, #1): the uniforms are drawn from the caller's
generator exactly as the reference draws them (into a float32 buffer); Triton applies the mask and writes it out. It
failed its keep mask on 50 of 127 elements when the float64 truth drew the reference's buffer in float64 (another
random sequence)."""

import torch
import triton
import triton.language as tl


@triton.jit
def apply_kernel(x_ptr, u_ptr, out_ptr, keep_ptr, n, stride, p, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m)
    u = tl.load(u_ptr + offs, mask=m)
    keep = u >= p
    tl.store(out_ptr + offs, tl.where(keep, x * scale, 0.0), mask=m)
    tl.store(keep_ptr + offs, keep, mask=m)


def custom_kernel(data):
    x, p, g = data
    u = torch.empty(x.shape, dtype=torch.float32, device=x.device).uniform_(generator=g)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    keep = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    n = x.numel()
    apply_kernel[(triton.cdiv(n, 1024),)](x, u, out, keep, n, x.stride(0), p, 1.0 / (1.0 - p), BLOCK=1024)
    return out, keep
