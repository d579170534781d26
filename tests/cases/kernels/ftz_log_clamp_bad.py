"""Wrong: a "safe" log|x| that clamps |x| to float32's smallest normal (reference ftz_log.py): about -87.3 for every
subnormal, where the answer is about -92 to -103 as given and -inf as the GPU's flush-to-zero reads it; neither
truth explains it."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def log_abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.abs(tl.load(x_ptr + offs, mask=m, other=1.0))
    tl.store(out_ptr + offs, libdevice.log(tl.maximum(x, 1.1754943508222875e-38)), mask=m)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    log_abs_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
