"""Wrong (red team round 30, #1): Single-pass chained prefix sum: each block scans its own 1024 elements and takes its carry from the block
before it (its inclusive total, stored in a small workspace), so one launch does the whole vector."""

import torch
import triton
import triton.language as tl


@triton.jit
def chained_scan_kernel(x_ptr, out_ptr, totals_ptr, n, stride_x, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask, other=0.0)
    local = tl.cumsum(x, axis=0)
    # carry: the inclusive total of everything before this block, published by the previous block
    carry = tl.load(totals_ptr + pid - 1, mask=pid > 0, other=0.0)
    tl.store(totals_ptr + pid, carry + tl.sum(x, axis=0))
    tl.store(out_ptr + offs, local + carry, mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    BLOCK = 1024
    grid = triton.cdiv(n, BLOCK)
    totals = torch.empty(max(grid, 1), dtype=torch.float32, device=x.device)
    if n:
        chained_scan_kernel[(grid,)](x, out, totals, n, x.stride(0), BLOCK=BLOCK)
    return out
