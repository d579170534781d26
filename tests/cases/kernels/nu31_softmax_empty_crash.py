"""Honest but fragile (new-user trial 31, F4): the example softmax v2 without its early return, so an empty row
(cols = 0) makes ``triton.next_power_of_2(0)`` = 0 a block ``tl.arange`` cannot build: it crashes inside Triton.
Passes (torch's answer on every listed spec), with a warning that names the crash on fuzz's empty size as one, not a
refusal; on a reference that lists the empty size in its tests it fails."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs * x_col_stride, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs * out_col_stride, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, BLOCK=block)
    return out
