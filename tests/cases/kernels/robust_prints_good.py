"""GOOD (robust-log): a correct vector add that prints about 20 MB on the first call of each import (debug output
left in): it must pass, with a warning that says how much it printed and how much of it the worker's log keeps."""

import sys

import torch
import triton
import triton.language as tl

_PRINTED = False
LINE = "x" * 1023  # with the newline, 1 KiB a line


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    global _PRINTED
    if not _PRINTED:
        _PRINTED = True
        for _ in range(20 * 1024):
            print(LINE)
        print("robust_prints_good: the last line", file=sys.stderr, flush=True)
    a, b = data
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
