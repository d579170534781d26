"""BAD (compile coverage): rows of at most 64 columns go to a host helper that launches ``narrow_kernel``,
whose mask calls Python's ``float()`` on a runtime int: the interpreter runs it (and gets the right answer),
Triton's compiler rejects it. The compile rung's dry call runs the largest spec (4099 columns, the chunked
kernel), and a width of 1 makes n_cols a constexpr, which float() takes: only compiling the launches the run
made (64 columns), for sm_90a, finds it."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    x_row = x_ptr + row * x_row_stride
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    for c in range(0, n_cols, CHUNK):
        m = tl.maximum(m, tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    total = tl.sum(s, axis=0)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * x_col_stride, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(out_ptr + row * out_row_stride + c + offs, (tl.exp(x - row_max) / total).to(out_ptr.dtype.element_ty),
                 mask=c + offs < n_cols)


@triton.jit
def narrow_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, x_col_stride, out_row_stride, ROWS: tl.constexpr,
                  COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < float(n_cols))  # float() of a runtime int: no kernel compiles
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :] * x_col_stride, mask=mask,
                other=-float("inf")).to(tl.float32)
    e = tl.where(mask, tl.exp(x - tl.max(x, axis=1)[:, None]), 0.0)
    sums = tl.sum(e, axis=1)
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], (e / sums[:, None]).to(out_ptr.dtype.element_ty),
             mask=mask)


def _narrow(x, out):
    rows, cols = x.shape
    narrow_kernel[(triton.cdiv(rows, 8),)](x, out, rows, cols, x.stride(0), x.stride(1), out.stride(0), ROWS=8,
                                          COLS=64)
    return out


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    if cols <= 64:
        return _narrow(x, out)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), cols, CHUNK=1024)
    return out
