"""rowcumsum, wrong: the carry stops growing past 4,096 elements, so every element of a longer row past its last
full 4,096 misses the blocks since (right on every row up to 4,096)."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowcumsum_kernel(x_ptr, out_ptr, n, x_row_stride, x_col_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * x_row_stride + offs * x_col_stride, mask=mask, other=0.0).to(tl.float32)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * out_row_stride + offs, s.to(out_ptr.dtype.element_ty), mask=mask)
        carry = tl.where(start + BLOCK < 4096, carry + tl.sum(x, axis=0), carry)  # the carry stops past 4096


def custom_kernel(data):
    (x,) = data
    rows, n = x.shape
    out = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    rowcumsum_kernel[(rows,)](x, out, n, x.stride(0), x.stride(1), out.stride(0), BLOCK=256)
    return out
