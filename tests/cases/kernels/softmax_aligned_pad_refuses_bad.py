"""uncovered, refused: a row softmax that refuses every strided layout (honestly: "unsupported layout") and takes a
path of its own for rows a multiple of 16 wide, in blocks of at least 256 lanes, whose masked lanes are padded with
-1e4 (a finite "minus infinity") instead of -inf. On a row of masked values (-1e9, the ``masked`` distribution) the
padding is the row's max: every exp underflows and the row comes out NaN. Only aligned widths with masked values
meet it, a pair that the covering design puts in one case per run, which was often laid out strided: this kernel
refused that case, and passed 14 runs of 24 (seeds 1-24, on the CPU) before refused cases counted as uncovered."""

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
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-1e4).to(tl.float32)  # the bug: not -inf
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
