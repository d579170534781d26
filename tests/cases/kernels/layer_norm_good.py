"""Honest fp32 LayerNorm with weight and bias: the mean first, then the variance of x - mean (two passes over the
row, each in BLOCK-wide chunks summed with tl.sum), all in fp32. On shifted rows its error is that of any fp32
LayerNorm (~1e-5 of the row's scale): it must pass (cases.md honest-fp32)."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, sx_row, sx_col, sw, sb, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * sx_row
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols * sx_col, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols * sx_col, mask=cols < N, other=0.0)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < N
        x = tl.load(x_row + cols * sx_col, mask=m, other=0.0)
        w = tl.load(w_ptr + cols * sw, mask=m, other=0.0)
        b = tl.load(b_ptr + cols * sb, mask=m, other=0.0)
        tl.store(y_ptr + row * N + cols, (x - mean) * rstd * w + b, mask=m)


def custom_kernel(data):
    x, weight, bias = data
    rows, cols = x.shape
    y = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    layer_norm_kernel[(rows,)](
        x, weight, bias, y, cols, x.stride(0), x.stride(1), weight.stride(0), bias.stride(0), 1e-5, BLOCK=1024
    )
    return y
