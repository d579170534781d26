"""Honest (red team round 18, F3): the rounded row mean of uint8 as an exact int32 sum per row times 1/n (one multiply
instead of a divide), rounded to nearest even (rint) as torch.round does; a mean exactly on k + 0.5 may land an ulp
to either side of it and round the other way than the reference's correctly rounded division."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def mean_round_kernel(x_ptr, out_ptr, n, inv_n, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * sx0 + offs * sx1, mask=offs < n, other=0).to(tl.int32)
    m = tl.sum(acc, axis=0).to(tl.float32) * inv_n
    tl.store(out_ptr + row, libdevice.rint(m).to(tl.uint8))


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.uint8, device=x.device)
    block = min(1024, triton.next_power_of_2(cols))
    mean_round_kernel[(rows,)](x, out, cols, 1.0 / cols, x.stride(0), x.stride(1), BLOCK=block)
    return out
