"""Wrong (red team round 35, #6): sigmoid(x) >= threshold where the reference takes >: True on tiny negative logits, whose float32 sigmoid rounds to 0.5."""

import torch
import triton
import triton.language as tl


@triton.jit
def sigmask_kernel(x_ptr, out_ptr, sxr, sxc, n_cols, threshold, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=m, other=0.0).to(tl.float32)
    p = 1.0 / (1.0 + tl.exp(-x))
    tl.store(out_ptr + row * n_cols + offs, p >= threshold, mask=m)


def custom_kernel(data):
    x, threshold = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=torch.bool, device=x.device)
    if rows and cols:
        sigmask_kernel[(rows, triton.cdiv(cols, 1024))](x, out, x.stride(0), x.stride(1), cols, threshold, BLOCK=1024)
    return out
