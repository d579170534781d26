"""GOOD twin of rt10_count64_bad.py: the same "tuner" that switches after 64 calls on one (shape, dtype), to a tuned
path that is right (a smaller block, alpha kept)."""

import torch
import triton
import triton.language as tl

_calls: dict = {}


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, xs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * xs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, alpha = data
    key = (tuple(x.shape), x.dtype)
    _calls[key] = _calls.get(key, 0) + 1
    block = 256 if _calls[key] > 64 else 1024
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), block),)](x, out, alpha, x.numel(), x.stride(0), BLOCK=block)
    return out
