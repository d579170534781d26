"""Wrong (reference rt17b_silu_flush.py, red team rt17b finding A): SiLU that returns 0 for every |x| < 1e-3, "to
skip the exp for activations that round away anyway" -- they do not: silu(1e-3) = 5e-4 is an ordinary bf16 number.
It loses every small activation; only 0.08% of N(0, 1) inputs are that small (under the 1% off allowance), and on
the ``extreme`` case, whose small normals are meant to catch it, the new off floor 2**-24 rms(ref) is ~2e29."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask, other=0.0).to(tl.float32)
    y = x / (1.0 + tl.exp(-x))
    y = tl.where(tl.abs(x) < 1e-3, 0.0, y)  # negligible activations: skip
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0) if x.dim() else 1, BLOCK=1024)
    return out
