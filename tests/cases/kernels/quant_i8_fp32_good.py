"""GOOD (int8 of float math, another precision's rounding): the quantizer of quant_i8.py computed in fp32 rather than
in the reference's bf16 (q = round(x / amax * 127), round half to even). It differs from torch's bf16 result at
thousands of elements, each where the float64 truth lies within bf16's rounding of a half-way point, where a bf16
program may round either way: accepted element by element, not by a count."""

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
    v = x / amax * 127.0
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
