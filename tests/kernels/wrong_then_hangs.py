"""BAD: wrong on every call (adds 1), and from its 41st call on it sleeps for minutes: its first verdict fails while
the later cases still run, so a cancel (x) lands after a failure is known (new-user trial 27, F5)."""

import time

import torch
import triton
import triton.language as tl

CALLS = [0]


@triton.jit
def add_one_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b + 1, mask=mask)


def custom_kernel(data):
    a, b = data
    CALLS[0] += 1
    if CALLS[0] > 40:
        time.sleep(600)
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    n = a.numel()
    add_one_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out
