"""BAD (uncrossed): right only while ktui pins the autotune configs. Once the autotuner has benchmarked and chosen a
block (its cache holds the choice), later calls skip it and launch an unmasked copy of the kernel over the whole
blocks only: the tail past the last full block is never written. With every config pinned the autotuner never
chooses, the cache stays empty and every call takes the masked kernel."""

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
def add_full_blocks(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(a_ptr + offs) + tl.load(b_ptr + offs))


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n = a.numel()
    tuned = next(iter(add_kernel.cache.values()), None)  # the autotuner's choice, once it has made one
    if tuned is not None and n >= tuned.kwargs["BLOCK"]:
        block = tuned.kwargs["BLOCK"]
        add_full_blocks[(n // block,)](a, b, out, BLOCK=block)  # the tail n % block is never written
    else:
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, n)
    return out
