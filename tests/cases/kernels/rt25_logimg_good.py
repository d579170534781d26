"""HONEST (red team round 25, #2): log(x + float32's eps), as the reference computes in float32: off from the
float64 truth by 20 on the black pixels (where the float64 run adds float64's eps), as the reference itself is."""

import torch
import triton
import triton.language as tl


@triton.jit
def log_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=1.0)
    tl.store(out_ptr + offs, tl.log(x + 1.1920928955078125e-07), mask=mask)


def custom_kernel(data):
    (x,) = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    log_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
