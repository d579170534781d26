"""BAD (honest-fp32's twin): LayerNorm with a one-pass variance, E[x^2] - E[x]^2, in fp32. On rows around
+-100..200 with a spread of ~1, E[x^2] ~ 2e4 carries a rounding error of ~1e-3 that the subtraction leaves behind:
the variance, and every output, is ~100x further off than the two-pass fp32 computation. It must fail, naming how
far it is from what the reference computed in float32 gets."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, sx_row, sx_col, sw, sb, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * sx_row
    s1 = tl.zeros((BLOCK,), dtype=tl.float32)
    s2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols * sx_col, mask=cols < N, other=0.0)
        s1 += x
        s2 += x * x
    mean = tl.sum(s1, axis=0) / N
    var = tl.maximum(tl.sum(s2, axis=0) / N - mean * mean, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
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
