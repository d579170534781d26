"""WRONG on a GPU (red team round 19, W1): out = x * alpha, with the offsets declared contiguous and aligned so that the loads vectorize (LDG.128).

The hints are a promise to the compiler: `offs * stride` is contiguous only when stride == 1. Under the Triton
interpreter they are ignored, so every strided layout computes right; on a GPU the vectorized load reads
x[s*i .. s*i+3] for the four elements x[s*i], x[s*(i+1)], ... of a stride-s view.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = tl.max_contiguous(tl.multiple_of(offs * stride, BLOCK), BLOCK)  # "help the vectorizer"
    x = tl.load(x_ptr + src, mask=mask)
    tl.store(out_ptr + offs, x * alpha, mask=mask)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, alpha, n, x.stride(0) if n else 1, BLOCK=1024)
    return out
