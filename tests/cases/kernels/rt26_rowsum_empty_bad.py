"""BAD (red team round 26, #10): a row sum, one program per row, that returns early for an empty batch or an empty
row: its torch.empty output holds garbage where the sum of no columns is 0. Passed: no test listed a 0 size and
fuzz never drew one."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, cols, s0, s1, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + r * s0 + offs * s1, mask=offs < cols, other=0.0)
    tl.store(out_ptr + r, tl.sum(acc, axis=0))


def custom_kernel(data):
    (x,) = data
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0 or cols == 0:
        return out
    rowsum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=1024)
    return out
