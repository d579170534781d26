"""WRONG: unique(sorted=False) whose values come in order of first appearance but whose inverse is each id's rank
among the sorted distinct ids (the convention of a sorted unique): ``values[inverse]`` is not ``ids`` unless the
ids happen to appear in increasing order."""

import torch
import triton
import triton.language as tl


@triton.jit
def first_kernel(ids_ptr, first_ptr, n, s, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = i < n
    mine = tl.load(ids_ptr + i * s, mask=live, other=0)
    first = i
    for start in range(0, n, BLOCK):
        j = start + tl.arange(0, BLOCK)
        other = tl.load(ids_ptr + j * s, mask=j < n, other=0)
        hit = (j[None, :] < n) & (other[None, :] == mine[:, None]) & (j[None, :] < first[:, None])
        cand = tl.where(hit, j[None, :], n)
        first = tl.minimum(first, tl.min(cand, axis=1))
    tl.store(first_ptr + i, first, mask=live)


@triton.jit
def write_kernel(ids_ptr, first_ptr, slot_ptr, values_ptr, inverse_ptr, n, s, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = i < n
    first = tl.load(first_ptr + i, mask=live, other=0)
    slot = tl.load(slot_ptr + first, mask=live, other=0)
    mine = tl.load(ids_ptr + i * s, mask=live, other=0)
    rank = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, n, BLOCK):  # distinct ids below mine: first appearances holding a smaller id
        j = start + tl.arange(0, BLOCK)
        other = tl.load(ids_ptr + j * s, mask=j < n, other=0)
        head = tl.load(first_ptr + j, mask=j < n, other=-1) == j
        below = (j[None, :] < n) & head[None, :] & (other[None, :] < mine[:, None])
        rank += tl.sum(below.to(tl.int32), axis=1)
    tl.store(inverse_ptr + i, rank.to(tl.int64), mask=live)
    tl.store(values_ptr + slot, tl.load(ids_ptr + i * s, mask=live, other=0), mask=live & (first == i))


def custom_kernel(data):
    (ids,) = data
    n = ids.numel()
    BLOCK = 64
    first = torch.empty(n, dtype=torch.int32, device=ids.device)
    inverse = torch.empty(n, dtype=torch.int64, device=ids.device)
    if n == 0:
        return torch.empty(0, dtype=ids.dtype, device=ids.device), inverse
    grid = (triton.cdiv(n, BLOCK),)
    first_kernel[grid](ids, first, n, ids.stride(0), BLOCK=BLOCK)
    seen = first == torch.arange(n, device=ids.device, dtype=torch.int32)
    slot = (torch.cumsum(seen.to(torch.int32), 0) - 1).to(torch.int32)
    values = torch.empty(int(seen.sum()), dtype=ids.dtype, device=ids.device)
    write_kernel[grid](ids, first, slot, values, inverse, n, ids.stride(0), BLOCK=BLOCK)
    return values, inverse
