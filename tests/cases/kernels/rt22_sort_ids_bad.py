"""WRONG (red team round 22, F5's twin): the rank sort counting an equal id at its own position as below it: equal
ids get colliding ranks, so some positions are written twice and others never."""

import torch
import triton
import triton.language as tl


@triton.jit
def rank_sort_kernel(ids_ptr, v_ptr, i_ptr, sr, sc, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    pi = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mi = pi < n
    ki = tl.load(ids_ptr + row * sr + pi * sc, mask=mi, other=0)
    rank = tl.zeros((BLOCK,), tl.int32)
    for j0 in range(0, n, BLOCK):
        pj = j0 + tl.arange(0, BLOCK)
        mj = pj < n
        kj = tl.load(ids_ptr + row * sr + pj * sc, mask=mj, other=0)
        below = (kj[None, :] < ki[:, None]) | ((kj[None, :] == ki[:, None]) & (pj[None, :] <= pi[:, None]))
        rank += tl.sum((below & mj[None, :]).to(tl.int32), axis=1)
    tl.store(v_ptr + row * n + rank, ki, mask=mi)
    tl.store(i_ptr + row * n + rank, pi.to(tl.int64), mask=mi)


def custom_kernel(data):
    (ids,) = data
    rows, n = ids.shape
    v = torch.empty((rows, n), dtype=ids.dtype, device=ids.device)
    i = torch.empty((rows, n), dtype=torch.int64, device=ids.device)
    if ids.numel():
        rank_sort_kernel[(rows, triton.cdiv(n, 128))](ids, v, i, ids.stride(0), ids.stride(1), n, BLOCK=128)
    return v, i
