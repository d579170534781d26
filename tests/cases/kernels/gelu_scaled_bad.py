"""Wrong: GELU times (1 + 1e-3) (reference gelu_tol.py): a wrong constant. Its float32 outputs are 1e-3 off
everywhere, far past the reference's rtol of 1e-5, whatever the whole-output rule does."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    y = 0.5005 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
