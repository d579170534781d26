"""BAD (uncrossed): row softmax that takes strides into account only for wide rows; rows of up to 1024 columns use
flat offsets (row * n_cols + col), right only for contiguous rows. Layouts tried only on the two largest specs
(4099 columns) never meet the narrow path."""

import torch
import triton
import triton.language as tl

NARROW = 1024


@triton.jit
def softmax_flat(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_strided(x_ptr, out_ptr, x_rs, x_cs, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_rs + offs * x_cs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(cols)
    if cols <= NARROW:
        softmax_flat[(rows,)](x, out, cols, BLOCK=block)
    else:
        softmax_strided[(rows,)](x, out, x.stride(0), x.stride(1), cols, BLOCK=block)
    return out
