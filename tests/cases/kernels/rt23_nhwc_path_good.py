"""Honest: a dense NCHW or NHWC (channels_last) input is one flat pass (the channel of flat element i is
(i // (H W)) % C or i % C), written into an output of the input's own memory format; any other layout goes
through a 4-D strided kernel."""

import torch
import triton
import triton.language as tl


@triton.jit
def flat_kernel(x_ptr, b_ptr, out_ptr, numel, C, HW, NHWC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < numel
    if NHWC:
        ch = offs % C
    else:
        ch = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + ch, mask=m)
    tl.store(out_ptr + offs, tl.maximum(x + b, 0.0), mask=m)


@triton.jit
def strided_kernel(x_ptr, b_ptr, out_ptr, numel, C, H, W, s0, s1, s2, s3, sb, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < numel
    w = offs % W
    h = (offs // W) % H
    c = (offs // (W * H)) % C
    n = offs // (W * H * C)
    x = tl.load(x_ptr + n * s0 + c * s1 + h * s2 + w * s3, mask=m)
    b = tl.load(b_ptr + c * sb, mask=m)
    tl.store(out_ptr + offs, tl.maximum(x + b, 0.0), mask=m)


def custom_kernel(data):
    x, b = data
    N, C, H, W = x.shape
    numel = x.numel()
    grid = (triton.cdiv(numel, 1024),)
    bc = b.contiguous()
    if x.is_contiguous():
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        flat_kernel[grid](x, bc, out, numel, C, H * W, NHWC=False, BLOCK=1024)
    elif x.is_contiguous(memory_format=torch.channels_last):
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device).contiguous(memory_format=torch.channels_last)
        flat_kernel[grid](x, bc, out, numel, C, H * W, NHWC=True, BLOCK=1024)
    else:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        strided_kernel[grid](x, b, out, numel, C, H, W, *x.stride(), b.stride(0), BLOCK=1024)
    return out
