"""Bad (cases.md oob): a one-pass row softmax that loads the whole power-of-two block of a row without a mask and
discards the lanes past the row with ``tl.where``. Every output is right (the extra lanes never reach it), but the
last row reads past the end of the input: it passed every rung on the CPU, and on a GPU it reads whatever memory
follows (an illegal address when nothing is mapped there)."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_row_stride + offs * x_col_stride).to(tl.float32)
    x = tl.where(offs < n_cols, x, -float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs * out_col_stride, y.to(out_ptr.dtype.element_ty),
             mask=offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols,
                            BLOCK=triton.next_power_of_2(cols))
    return out
