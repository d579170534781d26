"""y = 2 x + 1 (any layout: a strided x is copied to a contiguous local tensor). Every call's input and output are
kept referenced in a module list "until the device is done with them" (an async launch's keep-alive that is never
cleared: bad, the process's memory grows by one input and one output per call)."""

import torch
import triton
import triton.language as tl

_inflight = []  # keep-alive for asynchronous launches (never trimmed)


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
    _inflight.append((x, y))
    return y
