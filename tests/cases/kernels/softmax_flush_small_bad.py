"""mass-loss: the one-pass bf16-friendly softmax that writes 0 for every probability below max/1024 ("too small for
bf16 to matter"): up to ~10% of a row's mass is lost, yet PSNR and cosine stay above their bounds (the error is
small against the peak). Only an elementwise bound scaled to the dtype fails it."""

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
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    y = tl.where(e < 1.0 / 1024, 0.0, y)  # the bug: p < max / 1024 flushed to zero (e = p / max)
    tl.store(out_ptr + row * out_row_stride + offs * out_col_stride, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    num_warps = min(16, max(4, block // 512))
    # Strides go in as arguments: Triton specializes a stride of 1 as a constant, so contiguous rows lose nothing.
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, BLOCK=block,
                            num_warps=num_warps)
    return out
