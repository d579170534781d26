"""GOOD (twin of torch_operator_bad): vector add in Triton at every size. The host's own arithmetic (grid size,
bytes) uses Python operators on sizes, which is not torch compute."""

import torch
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs * a_stride, mask=mask) + tl.load(b_ptr + offs * b_stride, mask=mask),
             mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    assert a.numel() * a.element_size() == n * 4 and a.shape == b.shape
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(max(blocks, 1),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=BLOCK)
    return out
