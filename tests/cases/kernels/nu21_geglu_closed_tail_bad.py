"""WRONG (twin of nu21_geglu_sigmoid_good): GEGLU that writes 0 for b < -2 ("the gate is closed there"): gelu_tanh(-2)
is -0.045, not 0, so 2.3% of a normal input's outputs are wrong by up to 0.045 |a|; the float64 truth is exact there
(its roundings move it by 1e-16), so the rounding noise allows nothing."""

import torch
import triton
import triton.language as tl


@triton.jit
def geglu_kernel(x_ptr, out_ptr, N, sxm, sxn, som, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    a = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask).to(tl.float32)
    b = tl.load(x_ptr + row * sxm + (cols + N) * sxn, mask=mask).to(tl.float32)
    y = 0.7978845608028654 * (b + 0.044715 * b * b * b)
    g = b / (1.0 + tl.exp(-2.0 * y))  # gelu_tanh(b) = b * sigmoid(2y): no cancellation near b << 0
    out = tl.where(b < -2.0, 0.0, a * g)
    tl.store(out_ptr + row * som + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    (x,) = data
    M, two_n = x.shape
    N = two_n // 2
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK = 1024
    geglu_kernel[(M, triton.cdiv(N, BLOCK))](x, out, N, x.stride(0), x.stride(1), out.stride(0), BLOCK=BLOCK)
    return out
