"""Exact GELU with ``erf`` imported by name from triton.language.extra.libdevice, called in a @triton.jit helper (the
name sits in the module's globals, not behind the module: it returned None under the interpreter)."""

import torch
import triton
import triton.language as tl
from triton.language.extra.libdevice import erf


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + erf(x * 0.7071067811865476))


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, _gelu(x).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    (x,) = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
