"""Honest twin for rt18_topk_unsorted (red team round 18, F1): one program per row, k rounds of (max, first index
holding it), each pick masked out after. Returns the k picks in descending order, a valid answer for sorted=False."""

import torch
import triton
import triton.language as tl


@triton.jit
def topk_kernel(x_ptr, v_ptr, i_ptr, n_cols, sx0, sx1, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
    taken = offs >= n_cols
    for j in tl.static_range(K):
        cand = tl.where(taken, -float("inf"), x)
        m = tl.max(cand, axis=0)
        hit = (~taken) & (cand == m)
        idx = tl.min(tl.where(hit, offs, BLOCK), axis=0)
        tl.store(v_ptr + row * K + j, m.to(v_ptr.dtype.element_ty))
        tl.store(i_ptr + row * K + j, idx.to(tl.int64))
        taken = taken | (offs == idx)


def custom_kernel(x):
    rows, cols = x.shape
    k = min(4, cols)
    v = torch.empty((rows, k), dtype=x.dtype, device=x.device)
    i = torch.empty((rows, k), dtype=torch.int64, device=x.device)
    topk_kernel[(rows,)](x, v, i, cols, x.stride(0), x.stride(1), K=k, BLOCK=triton.next_power_of_2(cols))
    return v, i
