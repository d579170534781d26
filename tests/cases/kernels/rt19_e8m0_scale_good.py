"""Honest (red team round 19, F1): E8M0 block scales, the amax of each block of 32 and its biased exponent field
(bits 23..30) as uint8."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, blocks, stride, BLOCKS: tl.constexpr):
    b = tl.program_id(0) * BLOCKS + tl.arange(0, BLOCKS)
    i = tl.arange(0, 32)
    m = b < blocks
    x = tl.load(x_ptr + (b[:, None] * 32 + i[None, :]) * stride, mask=m[:, None], other=0.0)
    amax = tl.max(tl.abs(x), axis=1)
    e = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF
    tl.store(out_ptr + b, e.to(tl.uint8), mask=m)


def custom_kernel(x):
    blocks = x.numel() // 32
    out = torch.empty(blocks, dtype=torch.uint8, device=x.device)
    scale_kernel[(triton.cdiv(blocks, 256),)](x, out, blocks, x.stride(0), BLOCKS=256)
    return out
