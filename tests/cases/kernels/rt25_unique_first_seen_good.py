"""unique(sorted=False) in order of first appearance (as ``pandas.unique``): one kernel finds each id's first
position (the smallest j with ids[j] == ids[i]), the slots of the first appearances are their running count, and a
second kernel writes each first appearance to its slot and every element's inverse (its first appearance's slot)."""

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
    tl.store(inverse_ptr + i, slot.to(tl.int64), mask=live)
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
