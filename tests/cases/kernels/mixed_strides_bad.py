"""BAD (strides, mixed): vector add that reads both inputs with the first one's stride. Right whenever the inputs
share a layout (contiguous, both stride-2, both offset), wrong when one is strided and the other is not."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * stride, mask=mask)
    b = tl.load(b_ptr + offs * stride, mask=mask)  # b's own stride is b.stride(0)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), BLOCK=1024)
    return out
