"""Prefix sum in three launches: block totals; one program scanning the totals into carries; each block's local
scan plus its carry."""

import torch
import triton
import triton.language as tl


@triton.jit
def block_sums_kernel(x_ptr, totals_ptr, n, stride_x, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride_x, mask=offs < n, other=0.0)
    tl.store(totals_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def carries_kernel(totals_ptr, carries_ptr, nb, CHUNK: tl.constexpr):
    run = 0.0
    for start in range(0, nb, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        t = tl.load(totals_ptr + offs, mask=offs < nb, other=0.0)
        inc = tl.cumsum(t, axis=0)
        tl.store(carries_ptr + offs, run + inc, mask=offs < nb)  # inclusive
        run += tl.sum(t, axis=0)


@triton.jit
def scan_add_kernel(x_ptr, out_ptr, carries_ptr, n, stride_x, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask, other=0.0)
    carry = tl.load(carries_ptr + pid - 1, mask=pid > 0, other=0.0)  # (written by the previous launch)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0) + carry, mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if n == 0:
        return out
    BLOCK = 1024
    nb = triton.cdiv(n, BLOCK)
    totals = torch.empty(nb, dtype=torch.float32, device=x.device)
    carries = torch.empty(nb, dtype=torch.float32, device=x.device)
    block_sums_kernel[(nb,)](x, totals, n, x.stride(0), BLOCK=BLOCK)
    carries_kernel[(1,)](totals, carries, nb, CHUNK=1024)
    scan_add_kernel[(nb,)](x, out, carries, n, x.stride(0), BLOCK=BLOCK)
    return out
