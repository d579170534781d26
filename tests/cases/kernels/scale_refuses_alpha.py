"""GOOD (says so): a kernel built for alpha = 2.5 that refuses any other value with an error: shown as unsupported
on the scalars cases, not failed (as a refused layout is)."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * 2.5).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, alpha = data
    if alpha != 2.5:
        raise NotImplementedError(f"this kernel is built for alpha = 2.5, got {alpha}")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
