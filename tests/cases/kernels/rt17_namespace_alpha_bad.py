"""Pairs with `tests/cases/references/rt17_namespace_alpha.py`. Wrong: cfg.alpha folded into the constant 2.5 (the
value generate_input makes), so any other alpha is ignored. Passes (red team round 17): the scalars cases never
reach a float inside a SimpleNamespace, and the run rung says nothing about it."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    tl.store(out_ptr + offs, x * 2.5, mask=mask)


def custom_kernel(data):
    x, cfg = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    return out
