"""BAD (tail): the fp16 row sum that drops each row's last element (an off-by-one mask): wrong on ordinary rows, so
not judging the cases torch's own fp16 reference overflows on must not pass it (the twin of rowsum16_good)."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, cols, stride_r, stride_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_r + offs * stride_c, mask=offs < cols - 1, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(tl.float16))


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    rowsum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=1024)
    return out
