"""HONEST twin of zeros_bad.py (zeros-pass): kernels/softmax/v1.py's three passes over the row, in chunks of 16,384
columns for the 393,216-column rows of softmax_wide (v1's chunks of 1,024 take 384 steps a pass: about 35 s a call
under the Triton interpreter on a loaded 2-core machine, this one a few hundred ms)."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_cols,
                   CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    total = tl.sum(s, axis=0)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) / total
        tl.store(out_row + (c + offs) * out_col_stride, y.to(out_ptr.dtype.element_ty), mask=c + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, CHUNK=16384,
                            num_warps=16)
    return out
