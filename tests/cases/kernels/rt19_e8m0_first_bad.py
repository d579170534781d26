"""WRONG twin of rt19_e8m0_scale_good: the exponent of each block's first value, not of its largest magnitude."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, blocks, stride, BLOCKS: tl.constexpr):
    b = tl.program_id(0) * BLOCKS + tl.arange(0, BLOCKS)
    i = tl.arange(0, 32)
    m = b < blocks
    x = tl.load(x_ptr + (b[:, None] * 32 + i[None, :]) * stride, mask=m[:, None], other=0.0)
    amax = tl.sum(tl.where(i[None, :] == 0, tl.abs(x), 0.0), axis=1)
    e = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF
    tl.store(out_ptr + b, e.to(tl.uint8), mask=m)


def custom_kernel(x):
    blocks = x.numel() // 32
    out = torch.empty(blocks, dtype=torch.uint8, device=x.device)
    scale_kernel[(triton.cdiv(blocks, 256),)](x, out, blocks, x.stride(0), BLOCKS=256)
    return out
