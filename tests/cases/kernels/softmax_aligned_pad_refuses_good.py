"""Honest twin of softmax_aligned_pad_refuses_bad.py: the same contiguous-only softmax with its own path for rows a
multiple of 16 wide, the masked lanes padded with -inf there too. It refuses strided layouts ("unsupported layout",
not a failure), and the contiguous cases put in place of those it refuses pass."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_aligned_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), 16), 16)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.where(mask, tl.exp(x - tl.max(x, axis=0)), 0.0)
    tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    if not x.is_contiguous():
        raise ValueError(f"unsupported layout: contiguous rows only (strides {x.stride()})")
    rows, cols = x.shape
    out = torch.empty_like(x)
    if cols % 16 == 0:  # whole 16-lane vectors: at least 256 lanes a block
        softmax_aligned_kernel[(rows,)](x, out, cols, BLOCK=max(256, triton.next_power_of_2(cols)))
    else:
        softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
