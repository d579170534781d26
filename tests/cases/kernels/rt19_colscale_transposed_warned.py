"""WARNED (red team round 19, W4): column scale in 64 x 64 tiles, written into a column-major buffer and returned as
its transpose: the right values, strides (1, rows) instead of the row-major (cols, 1) that x * w returns.
`out.view(-1)` raises, and the next kernel that takes out.data_ptr() with row-major offsets reads it transposed."""

import torch
import triton
import triton.language as tl


@triton.jit
def colscale_kernel(x_ptr, w_ptr, out_ptr, rows, cols, sr, sc, sw, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * sr + c[None, :] * sc, mask=m)
    w = tl.load(w_ptr + c * sw, mask=c < cols)
    tl.store(out_ptr + c[None, :] * rows + r[:, None], x * w[None, :], mask=m)  # column-major


def custom_kernel(data):
    x, w = data
    rows, cols = x.shape
    out_t = torch.empty((cols, rows), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(rows, 64), triton.cdiv(cols, 64))
    colscale_kernel[grid](x, w, out_t, rows, cols, x.stride(0), x.stride(1), w.stride(0), BR=64, BC=64)
    return out_t.t()
