"""Honest twin of autotune_half_bad: two autotune configs (block sizes), each writing the whole output."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"])
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    add_kernel[lambda meta: (triton.cdiv(a.numel(), meta["BLOCK"]),)](a, b, out, a.numel())
    return out
