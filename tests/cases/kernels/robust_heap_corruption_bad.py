"""BAD (robust-crash): a vector add that corrupts the C heap on one size only, 129 (``free()`` of a pointer into the
middle of a buffer: what a store past the end of a tensor does to the allocator's bookkeeping), so glibc prints
``free(): invalid pointer`` and aborts the worker in the middle of the run rung. The message must name that case,
the kernel's line, the worker's last lines (glibc's) and the heap-corruption hint; the twin is
``robust_prints_good.py`` (and every example), which never dies."""

import ctypes

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
        buf = ctypes.create_string_buffer(64)
        ctypes.CDLL(None).free(ctypes.c_void_p(ctypes.addressof(buf) + 8))
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
