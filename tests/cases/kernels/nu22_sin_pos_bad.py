"""WRONG (new-user trial 22 F9's twin): x * sin(pos * 0.01) where the op is the cosine: caught on ordinary positions,
whatever the intrange cases can tell."""

import torch
import triton
import triton.language as tl


@triton.jit
def cos_pos_kernel(x_ptr, pos_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    p = tl.load(pos_ptr + offs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (x * tl.sin(p / 100.0)).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, pos = data
    x, pos = x.contiguous(), pos.contiguous()
    out = torch.empty_like(x)
    cos_pos_kernel[(triton.cdiv(x.numel(), 1024),)](x, pos, out, x.numel(), BLOCK=1024)
    return out
