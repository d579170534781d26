"""Pairs with `tests/cases/references/rt17_axpby_beta0.py`. Wrong: beta folded away ("beta is 0: skip y"), y never
read and beta never multiplied, so it is wrong for every beta != 0. Passes (red team round 17): 0.0 scaled by
0.5..2x, negated or times 8 stays 0.0, so no scalars case ever hands the kernel another beta, and the run rung names
no unmoved argument (a float with no kept move gets no note: "scaled by 0.5..2x still")."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    tl.store(out_ptr + offs, alpha * x, mask=mask)


def custom_kernel(data):
    x, y, alpha, beta = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, alpha, n, x.stride(0), BLOCK=1024)
    return out
