"""GOOD (twin of loaded_reference_bad): an honest Triton softmax that also uses ``sys`` (the interpreter's version,
for a launch option), which reads no loaded module."""

import sys

import torch
import triton
import triton.language as tl

NUM_WARPS = 4 if sys.version_info >= (3, 8) else 8


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


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), cols, CHUNK=1024, num_warps=NUM_WARPS)
    return out
