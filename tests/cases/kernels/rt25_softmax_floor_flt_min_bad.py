"""BAD (red team round 25, #6): round 20's softmax that skips the exp below e^-17 of the row max, with its zeros floored at FLT_MIN
(1.18e-38, "so a caller's log stays finite"): every probability below e^-17 written as 1.2e-38 (log(p) = -87 where it
 is -20 to -60), none exactly 0."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, sxr, sxc, sor, soc, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    # exp(-17) = 4e-8 < 2^-24: such a term rounds away in the fp32 sum (the max term adds 1), so skip its MUFU op
    e = tl.where(x > -17.0, tl.exp(x), 0.0)
    tl.store(out_ptr + row * sor + offs * soc, tl.maximum(e / tl.sum(e, axis=0), 1.1754943508222875e-38), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), cols,
                            BLOCK=triton.next_power_of_2(cols))
    return out
