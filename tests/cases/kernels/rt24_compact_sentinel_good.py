"""HONEST (red team round 24, F9): stream compaction as count, scan, `.item()`, allocate, write; the total starts
at -1 (a sentinel no count takes), so a dry call, where no launch runs, reads -1 and `torch.empty(-1)` raises in
host code: the dumps rung compiles the launches the run made instead of failing."""

import torch
import triton
import triton.language as tl


@triton.jit
def count_kernel(x_ptr, cnt_ptr, n, sx, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * sx, mask=offs < n, other=0.0)
    tl.store(cnt_ptr + pid, tl.sum((x > 0).to(tl.int32), axis=0))


@triton.jit
def scan_kernel(cnt_ptr, off_ptr, total_ptr, nblocks, BLOCK: tl.constexpr):
    carry = 0
    for b0 in range(0, nblocks, BLOCK):
        offs = b0 + tl.arange(0, BLOCK)
        c = tl.load(cnt_ptr + offs, mask=offs < nblocks, other=0)
        incl = tl.cumsum(c, axis=0)
        tl.store(off_ptr + offs, carry + incl - c, mask=offs < nblocks)
        carry += tl.sum(c, axis=0)
    tl.store(total_ptr, carry)


@triton.jit
def write_kernel(x_ptr, off_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * sx, mask=offs < n, other=0.0)
    keep = (x > 0) & (offs < n)
    k = keep.to(tl.int32)
    dst = tl.load(off_ptr + pid) + tl.cumsum(k, axis=0) - k
    tl.store(out_ptr + dst, x, mask=keep)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    BLOCK = 1024
    nb = triton.cdiv(n, BLOCK)
    cnt = torch.empty(nb, dtype=torch.int32, device=x.device)
    off = torch.empty(nb, dtype=torch.int32, device=x.device)
    total = torch.full((1,), -1, dtype=torch.int32, device=x.device)
    count_kernel[(nb,)](x, cnt, n, x.stride(0), BLOCK=BLOCK)
    scan_kernel[(1,)](cnt, off, total, nb, BLOCK=1024)
    m = int(total.item())
    out = torch.empty(m, dtype=x.dtype, device=x.device)
    write_kernel[(nb,)](x, off, out, n, x.stride(0), BLOCK=BLOCK)
    return out
