"""GOOD twin of softmax3d_flat_rows_bad.py: one program per (batch, seq) row, at b * stride(0) + s * stride(1), the
last dim read with its own stride: any layout."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, sb, ss, sd, ob, os, n_cols, CHUNK: tl.constexpr):
    b = tl.program_id(0)
    s_ = tl.program_id(1)
    x_row = x_ptr + b * sb + s_ * ss
    out_row = out_ptr + b * ob + s_ * os
    offs = tl.arange(0, CHUNK)
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * sd, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    acc = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * sd, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        acc += tl.exp(x - row_max)
    total = tl.sum(acc, axis=0)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + (c + offs) * sd, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) / total
        tl.store(out_row + c + offs, y.to(out_ptr.dtype.element_ty), mask=c + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    batch, seq, cols = x.shape
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    softmax_kernel[(batch, seq)](
        x, out, x.stride(0), x.stride(1), x.stride(2), out.stride(0), out.stride(1), cols, CHUNK=1024, num_warps=4
    )
    return out
