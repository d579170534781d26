"""Honest (new-user trial 21, F5): GEGLU computing gelu_tanh(b) as b * sigmoid(2y), the same function as
0.5 b (1 + tanh(y)) without its cancellation for b far below zero: nearer the exact value there than the float64 run of
the reference (``F.gelu(approximate="tanh")``), which cancels too. It failed 4 of 381 bf16 elements "off" against
that float64 truth; the truth's own roundings (``conditioning.RoundingNoise``) now widen the bound there."""

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
    out = a * g
    tl.store(out_ptr + row * som + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    (x,) = data
    M, two_n = x.shape
    N = two_n // 2
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK = 1024
    geglu_kernel[(M, triton.cdiv(N, BLOCK))](x, out, N, x.stride(0), x.stride(1), out.stride(0), BLOCK=BLOCK)
    return out
