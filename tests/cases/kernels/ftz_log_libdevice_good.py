"""Honest: log|x| with libdevice's logf (reference ftz_log.py). On a subnormal x the GPU flushes the argument to
zero and gives -inf where torch gives about -92: right under the hardware's flush-to-zero, judged against the
reference on inputs with their float32 subnormals flushed (``ktui.worker.ftz``)."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def log_abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, libdevice.log(tl.abs(x)), mask=m)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    log_abs_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
