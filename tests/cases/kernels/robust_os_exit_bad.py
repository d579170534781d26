"""BAD (robust-exit): a vector add that ends its worker with ``os._exit(3)`` inside ``custom_kernel`` on one size
only, 129 (after the compile rung's dry call, which runs the largest size): the run rung fails with how the worker
ended (exit code 3) and the case; the worker is restarted and the next ladder runs."""

import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    if a.numel() == 129:
        print("robust_os_exit_bad: giving up on 129 elements", file=sys.stderr, flush=True)
        os._exit(3)
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
