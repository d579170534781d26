"""GOOD (int8 of float math): the reference's own bf16 arithmetic (scale and quotient rounded to bf16, round half to
even); it gives 90 (0x5A, the poison byte) where the native computation does and the float64 truth differs."""

import torch
import triton
import triton.language as tl


@triton.jit
def quant_kernel(x_ptr, q_ptr, cols, sx0, sx1, sq0, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + r * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    s = (amax / 127.0).to(tl.bfloat16).to(tl.float32)
    v = (x / s).to(tl.bfloat16).to(tl.float32)
    f = tl.floor(v)
    d = v - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) != 0.0
    q = tl.where(d > 0.5, f + 1.0, tl.where(d < 0.5, f, tl.where(odd, f + 1.0, f)))
    tl.store(q_ptr + r * sq0 + offs, q.to(tl.int32).to(tl.int8), mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    quant_kernel[(rows,)](x, q, cols, x.stride(0), x.stride(1), q.stride(0), BLOCK=triton.next_power_of_2(cols))
    return q
