"""WRONG (red team round 22, F3): y = 2 x + 1 over a contiguous x; a strided x is made contiguous IN PLACE on the
caller's tensor (x.set_) "so that later calls skip the copy": the caller's tensor stops viewing its buffer (a
persistent input view then serves stale inputs), though every value reads the same."""

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
        x.set_(x.contiguous())  # (v2: x = x.contiguous())
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    axpb_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
