"""HONEST twin of rt18_rmsnorm_cache_bad.py: the same RMSNorm, its weight read as given on every call."""

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n, eps, sx0, sx1, sw, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=offs < n, other=0.0).to(tl.float32)
        acc += x * x
    r = tl.rsqrt(tl.sum(acc, axis=0) / n + eps)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs * sw, mask=mask, other=0.0)
        tl.store(out_ptr + row * n + offs, (x * r * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, w, eps = data
    rows, cols = x.shape
    block = min(1024, triton.next_power_of_2(cols))
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(rows,)](x, w, out, cols, eps, x.stride(0), x.stride(1), w.stride(0), BLOCK=block)
    return out
