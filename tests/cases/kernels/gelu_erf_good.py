"""Honest: exact GELU as the reference writes it, 0.5 x (1 + erf(x / sqrt 2)) in float32 (reference gelu_tol.py). Where
1 + erf cancels the reference computed in float32 is as far off; on a 1-element output ktui's whole-output rel_l2
rule failed it although every element was within the reference's own tolerance (a new user's report)."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
