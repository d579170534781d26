"""WRONG (red team round 18, W4): scores at or below -1e8 are taken as masked (-inf), and a row with nothing
unmasked gives zeros, as FlashAttention does for a fully masked query; torch.softmax of a row of equal -1e9 scores
is uniform (1/n). It passed in fp32 while the native allowance moved each input one ulp at random: a row of -1e9
moved apart by ulp(1e9) = 64 is one-hot, so the float32 reference looked off by ~1 there."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs * x_col_stride, mask=mask, other=-float("inf")).to(tl.float32)
    x = tl.where(x <= -1e8, -float("inf"), x)
    m = tl.max(x, axis=0)
    e = tl.where(x == -float("inf"), 0.0, tl.exp(x - m))
    s = tl.sum(e, axis=0)
    y = tl.where(s > 0, e / s, 0.0)
    tl.store(out_ptr + row * out_row_stride + offs * out_col_stride, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, BLOCK=block,
                            num_warps=4)
    return out
