"""Honest twin (red team round 35b, #3): int4 quantization of bf16 activations computed in float32, x / scale, as
the reference."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def quant_kernel(x_ptr, scale, out_ptr, n_cols, sx_r, sx_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * sx_r + cols * sx_c, mask=m, other=0.0)
    y = x.to(tl.float32) / scale
    q = libdevice.rint(y)
    q = tl.minimum(tl.maximum(q, -8.0), 7.0)
    tl.store(out_ptr + row * n_cols + cols, q.to(tl.int8), mask=m)


def custom_kernel(data):
    x, scale = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    if x.numel():
        BLOCK = 256
        quant_kernel[(rows, triton.cdiv(cols, BLOCK))](x, scale, out, cols, x.stride(0), x.stride(1), BLOCK=BLOCK)
    return out
