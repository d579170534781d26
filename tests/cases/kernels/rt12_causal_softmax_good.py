"""Masked softmax, one program per row: loads the row of scores and of the mask."""

import torch
import triton
import triton.language as tl


@triton.jit
def masked_softmax_kernel(x_ptr, m_ptr, out_ptr, sxr, sxc, smr, smc, sor, soc, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    inb = offs < n
    keep = tl.load(m_ptr + row * smr + offs * smc, mask=inb, other=0) != 0
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=inb, other=0.0).to(tl.float32)
    x = tl.where(keep, x, -float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * sor + offs * soc, y.to(out_ptr.dtype.element_ty), mask=inb)


def custom_kernel(data):
    scores, mask = data
    n = scores.shape[0]
    out = torch.empty(scores.shape, dtype=scores.dtype, device=scores.device)
    m = mask.view(torch.uint8) if mask.dtype == torch.bool else mask
    masked_softmax_kernel[(n,)](scores, m, out, scores.stride(0), scores.stride(1), m.stride(0), m.stride(1),
                                out.stride(0), out.stride(1), n, BLOCK=triton.next_power_of_2(n))
    return out
