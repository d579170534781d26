"""GOOD (robust-print-flood): a correct vector add that writes about 10 MB on every call, 5 MB to stdout and 5 MB
to stderr (debug dumps left in): it must pass, ktui must neither hang nor hold the output in memory, and the run
rung warns how much it printed and how much of it the worker's log keeps."""

import sys

import torch
import triton
import triton.language as tl

CHUNK = ("y" * 1023 + "\n") * 1024  # 1 MiB of lines


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    for _ in range(5):
        sys.stdout.write(CHUNK)
        sys.stderr.write(CHUNK)
    print("robust_print_flood: end of this call's output", file=sys.stderr, flush=True)
    a, b = data
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
