"""The honest twin of softmax_lse_rounded_bad: the log-sum-exp stored in float32 as computed."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_lse_kernel(x_ptr, p_ptr, lse_ptr, cols, sx_r, sx_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * sx_r + offs * sx_c, mask=m, other=-float("inf")).to(tl.float32)
    mx = tl.max(x, axis=0)
    e = tl.exp(x - mx)
    s = tl.sum(e, axis=0)
    tl.store(p_ptr + row * cols + offs, (e / s).to(tl.bfloat16), mask=m)
    lse = mx + tl.log(s)
    tl.store(lse_ptr + row, lse)


def custom_kernel(x):
    rows, cols = x.shape
    p = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    lse = torch.empty(rows, dtype=torch.float32, device=x.device)
    softmax_lse_kernel[(rows,)](x, p, lse, cols, x.stride(0), x.stride(1), BLOCK=max(triton.next_power_of_2(cols), 16))
    return p, lse
