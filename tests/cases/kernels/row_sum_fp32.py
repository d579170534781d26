"""Honest twin: accumulates the bf16 row sum in fp32 (a chunk of 512 a step: fp32 sums of 512 ones are exact; the bad
kernel's chunk of one element is what makes its bf16 accumulator stall, and costs 512 interpreted steps a row)."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((1,), dtype=tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * n_cols + c + tl.arange(0, CHUNK), mask=c + tl.arange(0, CHUNK) < n_cols, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + row + tl.arange(0, 1), acc.to(out_ptr.dtype.element_ty))


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    row_sum[(rows,)](x, out, cols, CHUNK=512)
    return out
