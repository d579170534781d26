"""shape-class, the honest twin of softmax_online_chunk_bad: the same online softmax over 4096-wide chunks, the
running sum always rescaled with the running max."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_cols,
                   CHUNK: tl.constexpr, GOOD: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    m = tl.max(tl.full((CHUNK,), -float("inf"), tl.float32), axis=0)
    m_lag = m
    s = tl.sum(tl.zeros((CHUNK,), tl.float32), axis=0)
    for c in range(0, tl.cdiv(n_cols, CHUNK)):
        cols = c * CHUNK + offs
        x = tl.load(x_ptr + row * x_row_stride + cols * x_col_stride, mask=cols < n_cols,
                    other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        if GOOD:
            ref_m = m
        else:
            ref_m = tl.where(c < 2, m, m_lag)  # the bug: from the third chunk, the max of two chunks ago
        s = s * tl.exp(ref_m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m_lag = m
        m = m_new
    for c in range(0, tl.cdiv(n_cols, CHUNK)):
        cols = c * CHUNK + offs
        x = tl.load(x_ptr + row * x_row_stride + cols * x_col_stride, mask=cols < n_cols,
                    other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + row * out_row_stride + cols * out_col_stride, y.to(out_ptr.dtype.element_ty),
                 mask=cols < n_cols)


GOOD = True


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, CHUNK=4096,
                            GOOD=GOOD, num_warps=8)
    return out
