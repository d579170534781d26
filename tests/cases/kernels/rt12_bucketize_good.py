"""Bucketize by a branchless binary search (lower bound) per value, a block of values per program."""

import torch
import triton
import triton.language as tl


@triton.jit
def bucketize_kernel(b_ptr, v_ptr, out_ptr, n, nb, sb, sv, so, STEPS: tl.constexpr, TOP: tl.constexpr,
                     BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(v_ptr + offs * sv, mask=m, other=0.0)
    pos = tl.zeros((BLOCK,), dtype=tl.int64)  # how many boundaries are below v
    step = TOP
    for _ in tl.static_range(STEPS):
        cand = pos + step
        ok = cand <= nb
        bv = tl.load(b_ptr + (cand - 1) * sb, mask=m & ok, other=0.0)
        pos = tl.where(ok & (bv < v), cand, pos)
        step = step // 2
    tl.store(out_ptr + offs * so, pos, mask=m)


def custom_kernel(data):
    boundaries, values = data
    n, nb = values.numel(), boundaries.numel()
    out = torch.empty(values.shape, dtype=torch.int64, device=values.device)
    top = 1 << (max(nb, 1).bit_length() - 1)  # the largest power of two <= nb
    bucketize_kernel[(triton.cdiv(n, 1024),)](boundaries, values, out, n, nb, boundaries.stride(0), values.stride(0),
                                               out.stride(0), STEPS=top.bit_length(), TOP=top, BLOCK=1024)
    return out
