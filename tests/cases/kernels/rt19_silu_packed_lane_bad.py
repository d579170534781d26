"""bf16 SiLU, wrong on one lane in 128: the last lane of every 128 columns goes through a packed slot that keeps only
3 of bf16's 7 mantissa bits (rounded), so those outputs are off by up to 6.25% (16 ulp of bf16), on every row."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, cols, sr, sc, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = c < cols
    x = tl.load(x_ptr + row * sr + c * sc, mask=m, other=0.0).to(tl.float32)
    y = (x / (1.0 + tl.exp(-x))).to(tl.bfloat16)
    bits = y.to(tl.int16, bitcast=True)
    packed = ((bits + 8) & -16).to(tl.bfloat16, bitcast=True)  # 3 mantissa bits, rounded
    y = tl.where(c % 128 == 127, packed, y)
    tl.store(out_ptr + row * cols + c, y, mask=m)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    silu_kernel[(rows, triton.cdiv(cols, 1024))](x, out, cols, x.stride(0), x.stride(1), BLOCK=1024)
    return out
