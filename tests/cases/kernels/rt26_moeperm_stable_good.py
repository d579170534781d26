"""MoE dispatch as a stable counting sort: token t goes to rank #(ids < ids[t]) + #(ids == ids[t] before t), and
one kernel writes both perm[rank] = t and out[rank] = x[t] (tokens within an expert in their original order: one of
the orders the reference's unstable argsort allows). Each program ranks a block of tokens against all of them."""

import torch
import triton
import triton.language as tl


@triton.jit
def dispatch_kernel(
    x_ptr, ids_ptr, out_ptr, perm_ptr, T, D, sxt, sxd, sit, sot, BLOCK: tl.constexpr, BLOCK_D: tl.constexpr
):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = t < T
    mine = tl.load(ids_ptr + t * sit, mask=live, other=0)
    rank = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, T, BLOCK):
        j = start + tl.arange(0, BLOCK)
        other = tl.load(ids_ptr + j * sit, mask=j < T, other=0)
        o, m, jj, tt = other[None, :], mine[:, None], j[None, :], t[:, None]
        before = (jj < T) & ((o < m) | ((o == m) & (jj < tt)))
        rank += tl.sum(before.to(tl.int32), axis=1)
    tl.store(perm_ptr + rank, t.to(tl.int64), mask=live)
    for d0 in range(0, D, BLOCK_D):
        d = d0 + tl.arange(0, BLOCK_D)
        keep = live[:, None] & (d[None, :] < D)
        rows = tl.load(x_ptr + t[:, None] * sxt + d[None, :] * sxd, mask=keep)
        tl.store(out_ptr + rank[:, None] * sot + d[None, :], rows, mask=keep)


def custom_kernel(data):
    x, ids = data
    T, D = x.shape
    out = torch.empty(T, D, dtype=x.dtype, device=x.device)
    perm = torch.empty(T, dtype=torch.int64, device=x.device)
    if T:
        BLOCK = 64
        dispatch_kernel[(triton.cdiv(T, BLOCK),)](
            x, ids, out, perm, T, D, x.stride(0), x.stride(1), ids.stride(0), out.stride(0), BLOCK=BLOCK, BLOCK_D=64
        )
    return out, perm
