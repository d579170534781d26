"""Honest fp16 row sum (fp32 accumulator, rounded to fp16 at the store): on `shifted` inputs a row of 4099 values
near 150 sums past fp16's 65504, and torch's own fp16 reference overflows there too (red team round 9: failed)."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, cols, stride_r, stride_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_r + offs * stride_c, mask=offs < cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(tl.float16))


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    rowsum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=1024)
    return out
