"""MoE router: BLOCK_T tokens per program; k rounds of argmax over score + bias, each pick's sigmoid score kept,
then renormalized. The picks come out in descending order of score + bias (the reference leaves the order open)."""

import torch
import triton
import triton.language as tl


@triton.jit
def router_kernel(logits_ptr, bias_ptr, w_ptr, ids_ptr, T, E, K, stride_t, stride_e, stride_b,
                  BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    offs = tl.arange(0, BLOCK_E)
    rmask = rows < T
    mask = rmask[:, None] & (offs[None, :] < E)
    x = tl.load(logits_ptr + rows[:, None] * stride_t + offs[None, :] * stride_e, mask=mask, other=0.0)
    b = tl.load(bias_ptr + offs * stride_b, mask=offs < E, other=0.0)
    s = 1.0 / (1.0 + tl.exp(-x.to(tl.float32)))
    sel = tl.where(mask, s + b.to(tl.float32)[None, :], -float("inf"))
    ks = tl.arange(0, BLOCK_K)
    w = tl.zeros([BLOCK_T, BLOCK_K], dtype=tl.float32)
    ids = tl.zeros([BLOCK_T, BLOCK_K], dtype=tl.int64)
    for j in range(K):
        best = tl.argmax(sel, axis=1)
        hit = offs[None, :] == best[:, None]
        wj = tl.sum(tl.where(hit, s, 0.0), axis=1)
        w = tl.where(ks[None, :] == j, wj[:, None], w)
        ids = tl.where(ks[None, :] == j, best.to(tl.int64)[:, None], ids)
        sel = tl.where(hit, -float("inf"), sel)
    kmask = ks[None, :] < K
    w = w / tl.sum(tl.where(kmask, w, 0.0), axis=1)[:, None]
    out = rows[:, None] * K + ks[None, :]
    tl.store(w_ptr + out, w, mask=rmask[:, None] & kmask)
    tl.store(ids_ptr + out, ids, mask=rmask[:, None] & kmask)


def custom_kernel(data):
    logits, bias, k = data
    T, E = logits.shape
    w = torch.empty((T, k), dtype=torch.float32, device=logits.device)
    ids = torch.empty((T, k), dtype=torch.int64, device=logits.device)
    BLOCK_T = 32
    router_kernel[(triton.cdiv(T, BLOCK_T),)](
        logits, bias, w, ids, T, E, k, logits.stride(0), logits.stride(1), bias.stride(0),
        BLOCK_T=BLOCK_T, BLOCK_E=triton.next_power_of_2(E), BLOCK_K=triton.next_power_of_2(k))
    return w, ids
