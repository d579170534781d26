"""Wrong: log|x| that takes every |x| below 1e-30 as zero (reference ftz_log.py): a "flush" of normal numbers too,
-inf where the answer is about -70, which no flush-to-zero of subnormals explains."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def log_abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.abs(tl.load(x_ptr + offs, mask=m, other=1.0))
    x = tl.where(x < 1e-30, 0.0, x)
    tl.store(out_ptr + offs, libdevice.log(x), mask=m)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    log_abs_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
