"""BAD (red team 31, #8): erf GELU in float32, written to bf16 by keeping the float32's high 16 bits, a hand-made
"cheap pack" that truncates toward zero instead of rounding to nearest even (reference gelu_bf16.py). Every element
is within one ulp, inside every size bound, but every erring element errs toward zero: a sum of the output is biased
by ~u/2 (-2.1e-3 relative at 2**20 elements, 17x an honest kernel's). The honest twin: rt31_gelu_rne_good.py."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    bits = y.to(tl.uint32, bitcast=True) >> 16  # the high half: sign, exponent and 7 mantissa bits
    tl.store(out_ptr + offs, bits.to(tl.uint16).to(tl.bfloat16, bitcast=True), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
