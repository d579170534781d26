"""BAD (robust-exit): a vector add that, on one size only (129), replaces ``threading.excepthook`` with a hook that
swallows every exception and then calls ``sys.exit(3)`` on the thread ktui calls it on. ktui calls it on the
worker's main thread, whose exceptions never go through that hook: the call still ends at once as a failed run
naming the exit (not waiting for its time limit), and the next call runs."""

import sys
import threading

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def _swallow(args):
    pass  # every uncaught exception of every thread disappears here


def custom_kernel(data):
    a, b = data
    if a.numel() == 129:
        threading.excepthook = _swallow
        sys.exit(3)
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
