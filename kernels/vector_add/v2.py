"""Vector add, faster: 4096 elements per program (16 per thread with 8 warps: four 128-bit loads in flight per
operand), and int64 offsets so that sizes past 2**31 elements index correctly."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, eviction_policy="evict_first")
    b = tl.load(b_ptr + offs, mask=mask, eviction_policy="evict_first")
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 4096),)](a, b, out, n, BLOCK=4096, num_warps=8)
    return out
