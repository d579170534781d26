"""Honest twin of poison_watch_bad: the same kernel, always subtracting the row's max."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_rs, x_cs, out_rs, out_cs, n_cols, SAFE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_rs + offs * x_cs, mask=mask, other=-float("inf")).to(tl.float32)
    if SAFE:
        x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * out_rs + offs * out_cs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols, SAFE=True,
                            BLOCK=triton.next_power_of_2(cols))  # fmt: skip
    return out
