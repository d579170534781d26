"""BAD (integer range): x + 1 computed in int8 and widened after, so 127 + 1 wraps to -128. generate_input draws
-100..99, and ``intrange`` drew with torch.randint's exclusive bound, never 127: this passed every run. The dtype's
minimum and maximum are now planted in every intrange case."""

import torch
import triton
import triton.language as tl


@triton.jit
def inc_kernel(x_ptr, y_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0)
    y = x + tl.full(x.shape, 1, tl.int8)  # the bug: the sum in int8
    tl.store(y_ptr + offs, y.to(tl.int16), mask=mask)


def custom_kernel(x):
    y = torch.empty(x.shape, dtype=torch.int16, device=x.device)
    inc_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), x.stride(0), BLOCK=1024)
    return y
