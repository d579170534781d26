"""Honest (red team round 28, #3): round, convert to int32, clamp in integers, narrow to int8. On sm_90 the f32 -> s32 conversion
(cvt.rzi.s32.f32 / cvt.rni) saturates at the int32 range (PTX ISA: float-to-integer conversions clamp to the
destination range), so a quotient past 2**31 becomes INT_MAX and the clamp gives 127, as torch's clamp does."""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def quant_kernel(x_ptr, s_ptr, q_ptr, C, sx0, sx1, ss, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    s = tl.load(s_ptr + row * ss)
    for c0 in range(0, C, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < C
        x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=m, other=0.0)
        qi = libdevice.rint(x / s).to(tl.int32)
        qi = tl.minimum(tl.maximum(qi, -128), 127)
        tl.store(q_ptr + row * C + cols, qi.to(tl.int8), mask=m)


def custom_kernel(data):
    x, scale = data
    R, C = x.shape
    q = torch.empty((R, C), dtype=torch.int8, device=x.device)
    if R == 0 or C == 0:
        return q
    block = min(1024, triton.next_power_of_2(C))
    quant_kernel[(R,)](x, scale, q, C, x.stride(0), x.stride(1), scale.stride(0), BLOCK=block)
    return q
