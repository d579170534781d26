"""WRONG twin of rt18_topk_sorted_good: the row is read through its first 1024 columns only (one block), so a pick
past them is missed on wider rows; sorted or not, the set of picks is wrong."""

import torch
import triton
import triton.language as tl


@triton.jit
def topk_kernel(x_ptr, v_ptr, i_ptr, n_cols, sx0, sx1, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < tl.minimum(n_cols, 1024)
    x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
    taken = offs >= tl.minimum(n_cols, 1024)
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
    topk_kernel[(rows,)](x, v, i, cols, x.stride(0), x.stride(1), K=k, BLOCK=min(triton.next_power_of_2(cols), 1024))
    return v, i
