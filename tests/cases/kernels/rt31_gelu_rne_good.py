"""Honest twin of rt31_gelu_trunc_bad.py: the same float32 GELU packed to bf16 by hand, rounding to nearest even
(add 0x7FFF plus the lowest kept bit, then keep the high 16 bits), as cvt.rn.bf16.f32 does (reference gelu_bf16.py).
Its errors lean neither way."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    bits = y.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest, ties to even (no NaN from a GELU of finite x)
    tl.store(out_ptr + offs, bits.to(tl.uint16).to(tl.bfloat16, bitcast=True), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
