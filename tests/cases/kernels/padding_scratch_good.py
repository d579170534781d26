"""GOOD twin of padding_scratch_bad: the same row softmax, with its scratch slot in a buffer of its own (one element
per row, allocated by the kernel) whatever the input's row stride: nothing outside its output is written."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, scratch_ptr, x_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    tl.store(scratch_ptr + row, tl.max(x, axis=0))
    m = tl.load(scratch_ptr + row)
    y = tl.exp(x - m)
    tl.store(out_ptr + row * out_row_stride + offs, (y / tl.sum(y, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    if x.stride(-1) != 1:
        x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    scratch = torch.empty(max(rows, 1), dtype=torch.float32, device=x.device)
    softmax_kernel[(rows,)](x, out, scratch, x.stride(0), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out
