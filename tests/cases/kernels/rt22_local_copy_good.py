"""HONEST twin of rt22_repoint_input_bad: a strided x is copied to a contiguous local tensor."""

import torch
import triton
import triton.language as tl


@triton.jit
def axpb_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (2 * x + 1).to(y_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    (x,) = data
    if not x.is_contiguous():
        x = x.contiguous()  # a local copy: the caller's tensor is left alone
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    axpb_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
