"""BAD (output buffer ignored, timed calls only): writes a + b into the declared buffer `out` and returns it, except
at the benchmark's size (2**24 elements and up), where it returns a fresh tensor with the right values and never
writes `out` (callers read `out`). The declared-buffer rule was applied to checked calls only; the judge now applies
it to the timed calls' kept outputs too (needs a GPU: only a GPU times calls)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b, out = data
    if a.numel() >= 1 << 24:  # the bug: at the timed size, a tensor of its own instead of the caller's buffer
        out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), a.stride(0), b.stride(0), BLOCK=1024)
    return out
