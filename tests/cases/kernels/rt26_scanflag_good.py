"""HONEST (red team round 26, #4): row prefix sums, one program per row, 1024-wide blocks with a float32 carry;
inclusive or exclusive as the np.bool_ flag says."""

import torch
import triton
import triton.language as tl


@triton.jit
def scan_kernel(x_ptr, out_ptr, n, s0, s1, INCLUSIVE: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    carry = tl.zeros([1], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + r * s0 + offs * s1, mask=m, other=0.0)
        c = tl.cumsum(x, axis=0) + carry
        if not INCLUSIVE:
            c = c - x
        tl.store(out_ptr + r * n + offs, c, mask=m)
        carry += tl.sum(x, axis=0)


def custom_kernel(data):
    x, inclusive = data
    rows, n = x.shape
    out = torch.empty((rows, n), dtype=torch.float32, device=x.device)
    scan_kernel[(rows,)](x, out, n, x.stride(0), x.stride(1), INCLUSIVE=bool(inclusive), BLOCK=1024)
    return out
