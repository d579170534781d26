"""Wrong (red team round 35b, #3): bf16 -> int8, round to nearest, saturating: one program per row block."""

import torch
import triton
import triton.language as tl


@triton.jit
def round_i8_kernel(x_ptr, out_ptr, n_cols, sx_r, sx_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * sx_r + cols * sx_c, mask=m, other=0.0).to(tl.float32)
    q = tl.floor(x + 0.5)  # round to nearest
    q = tl.minimum(tl.maximum(q, -128.0), 127.0)
    tl.store(out_ptr + row * n_cols + cols, q.to(tl.int8), mask=m)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    if x.numel():
        BLOCK = 256
        round_i8_kernel[(rows, triton.cdiv(cols, BLOCK))](x, out, cols, x.stride(0), x.stride(1), BLOCK=BLOCK)
    return out
