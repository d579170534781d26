"""HONEST twin of rt22_keeps_outputs_bad: y = 2 x + 1; the last call's output is kept for inspection (replaced by
the next call's: a caller's memory does not grow)."""

import torch
import triton
import triton.language as tl

_last = {}  # the last call's output, for a debugger


@triton.jit
def axpb_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (2 * x + 1).to(y_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    (x,) = data
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    axpb_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    _last["y"] = y
    return y
