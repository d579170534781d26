"""BAD (autotune-mutation): two autotune configs each write half of the output. While autotuning, both configs run on
the same output buffer, so the first call's result is complete; each config alone leaves half of it unwritten."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"HALF": 0}), triton.Config({"HALF": 1})], key=["n"])
@triton.jit
def add_half(a_ptr, b_ptr, out_ptr, n, HALF: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & ((offs < n // 2) if HALF == 0 else (offs >= n // 2))
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    add_half[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
