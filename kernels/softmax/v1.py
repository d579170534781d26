"""Row softmax, plain: any width, in chunks of 1024 columns and three passes over the row (max, sum of exp,
normalize and store): simple and general (any width, any strides), but it reads each row three times."""

import torch
import triton
import triton.language as tl

import ktui.trace.triton as kt  # region markers for the trace rung: no-ops in every other build


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_cols,
                   CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    with kt.region("max"):
        for c in range(0, n_cols, CHUNK):
            x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
            m = tl.maximum(m, x)
        row_max = tl.max(m, axis=0)
    s = tl.zeros((CHUNK,), tl.float32)
    with kt.region("sum"):
        for c in range(0, n_cols, CHUNK):
            x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
            s += tl.exp(x - row_max)
        total = tl.sum(s, axis=0)
    with kt.region("normalize"):
        for c in range(0, n_cols, CHUNK):
            x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - row_max) / total
            tl.store(out_row + (c + offs) * out_col_stride, y.to(out_ptr.dtype.element_ty), mask=c + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, CHUNK=1024,
                            num_warps=4)
    return out
