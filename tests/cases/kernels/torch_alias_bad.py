"""BAD (hidden-torch): rows up to 1024 wide in one Triton block; wider rows go to ``_rows``, an alias of
``torch.softmax`` bound at import, so no torch name is called where it computes. Those specs launch no kernel."""

import torch
import triton
import triton.language as tl

_rows = torch.softmax


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs * x_col_stride, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row_stride + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    if cols > 1024:
        return _rows(x.float(), -1).to(x.dtype)
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out
