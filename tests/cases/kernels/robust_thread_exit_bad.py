"""BAD (robust-crash): a vector add that ends its worker from another thread (``os._exit(4)`` in a
``threading.Thread``) on one size only, 129: the run rung fails with how the worker ended (exit code 4), the case it
was running and the usual cause; the worker is restarted and ktui goes on. ``sys.exit`` in a thread, which Python
ignores, is done on every call and changes nothing."""

import os
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


def _run(target, *args):
    t = threading.Thread(target=target, args=args)
    t.start()
    t.join()


def custom_kernel(data):
    a, b = data
    _run(sys.exit, 5)  # a SystemExit in a thread ends that thread only
    if a.numel() == 129:
        _run(os._exit, 4)
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
