"""GOOD (slow but steady): a correct vector add that takes 0.4 s per call on the host. No case hangs: a time
limit on time without progress never fires, however many cases run."""

import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, stride_a, stride_b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * stride_a, mask=mask)
    b = tl.load(b_ptr + offs * stride_b, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    time.sleep(0.4)
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
