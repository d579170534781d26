"""BAD (robust-cwd): a correct vector add that changes the worker's working directory on every call (``os.chdir``
to the system's temporary folder): it passes (the checks never use relative paths), the compile rung reports the
move, and ktui changes the directory back after each request. The twin is ``robust_prints_good.py``."""

import os
import tempfile

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    os.chdir(tempfile.gettempdir())
    a, b = data
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
