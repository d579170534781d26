"""BAD (strides, permuted): softmax over the last dim of (batch, seq, dim) with the leading dims flattened into rows at
r * x.stride(-2), and an honest-looking refusal of a non-unit last stride and of broadcast dims. Right for every
layout whose leading dims merge into one row stride; wrong on a head-permuted tensor (its first two dims stored
swapped: unit inner stride, nothing broadcast)."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * n_cols
    offs = tl.arange(0, CHUNK)
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + c + offs, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + c + offs, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    total = tl.sum(s, axis=0)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_row + c + offs, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(out_row + c + offs, (tl.exp(x - row_max) / total).to(out_ptr.dtype.element_ty),
                 mask=c + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    if x.stride(-1) != 1 or 0 in x.stride():
        raise ValueError(f"softmax: needs a unit-stride last dim and no broadcast dims, got strides {x.stride()}")
    cols = x.shape[-1]
    rows = x.numel() // cols
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    softmax_kernel[(rows,)](x, out, x.stride(-2) if x.dim() > 1 else cols, cols, CHUNK=1024, num_warps=4)
    return out
