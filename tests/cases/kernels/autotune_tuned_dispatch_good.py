"""Honest twin of autotune_tuned_dispatch_bad: once the autotuner has chosen a block, later calls launch a plain copy
of the kernel with that block directly (skipping the autotuner's bookkeeping), masked, over every block."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"])
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_tuned(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n = a.numel()
    tuned = next(iter(add_kernel.cache.values()), None)  # the autotuner's choice, once it has made one
    if tuned is not None:
        block = tuned.kwargs["BLOCK"]
        add_tuned[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block)
    else:
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, n)
    return out
