"""BAD (robust-crash): a vector add that aborts the process (``os.abort()``, SIGABRT: what a failed check in C code
or heap corruption does) on one size only, 129, so the worker dies in the middle of the run rung: the message must
name that case, the kernel's line and the worker's last lines."""

import os

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
        print("robust_abort_bad: giving up on 129 elements", flush=True)
        os.abort()
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
