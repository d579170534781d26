"""BAD (red team round 25, #2): a Mitchell "fast log" (the float's bits read as an integer: log2 x ~ bits / 2**23 -
127), off by up to 0.06 (natural-log units) on every non-black pixel; the black pixels get log(2.2e-16), float64's
eps, as the float64 truth does. Passed "at 0% of tolerance": the reference's own float32 error on the black pixels
(20) set the bar (8 x 20) for every pixel."""

import torch
import triton
import triton.language as tl


@triton.jit
def fast_log_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=1.0)
    bits = x.to(tl.int32, bitcast=True).to(tl.float32)
    log2 = bits * (1.0 / 8388608.0) - 127.0
    y = tl.where(x == 0.0, -36.04365338911715, log2 * 0.6931471805599453)
    tl.store(out_ptr + offs, y, mask=mask)


def custom_kernel(data):
    (x,) = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    fast_log_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
