"""Wrong (red team round 35b, #3): Static int4 quantization (one value per int8) of bf16 activations. The reciprocal scale is made once on the host as a tensor of the
activations' dtype (as the rest of the model keeps its scales) and the scaling runs in bf16 (bf16 FMA throughput)."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def quant_kernel(x_ptr, inv_ptr, out_ptr, n_cols, sx_r, sx_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * sx_r + cols * sx_c, mask=m, other=0.0)
    inv = tl.load(inv_ptr)
    y = x * inv  # bf16 * bf16
    q = libdevice.rint(y.to(tl.float32))
    q = tl.minimum(tl.maximum(q, -8.0), 7.0)
    tl.store(out_ptr + row * n_cols + cols, q.to(tl.int8), mask=m)


def custom_kernel(data):
    x, scale = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    inv = torch.full((1,), 1.0 / scale, dtype=x.dtype, device=x.device)
    if x.numel():
        BLOCK = 256
        quant_kernel[(rows, triton.cdiv(cols, BLOCK))](x, inv, out, cols, x.stride(0), x.stride(1), BLOCK=BLOCK)
    return out
