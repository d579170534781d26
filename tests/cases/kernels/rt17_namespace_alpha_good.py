"""Honest twin of rt17_namespace_alpha_bad.py (reference rt17_namespace_alpha.py): x * cfg.alpha with alpha read from
the SimpleNamespace on every call."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, sx, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask)
    tl.store(out_ptr + offs, x * alpha, mask=mask)


def custom_kernel(data):
    x, cfg = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), cfg.alpha, BLOCK=1024)
    return out
