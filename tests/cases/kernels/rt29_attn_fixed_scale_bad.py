"""Wrong (the twin of rt29_attn_tutorial_good): sm_scale folded into the constant head_dim ** -0.5 that generate_input
passes, so any other scale a caller gives is ignored: the scalars cases that scale it fail (not only the negated
one), and the version fails."""

import torch
import triton
import triton.language as tl


@triton.jit
def _attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, S,
              sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd, H,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
                mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = (1.0 / tl.sqrt(D * 1.0)) * 1.44269504  # (sm_scale ignored)
    for start_n in range(0, S, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + b * skb + h * skh + cols[None, :] * sks + offs_d[:, None] * skd,
                    mask=cols[None, :] < S, other=0.0)
        qk = tl.dot(q, k, input_precision="ieee")
        qk = tl.where(cols[None, :] < S, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + b * svb + h * svh + cols[:, None] * svs + offs_d[None, :] * svd,
                    mask=cols[:, None] < S, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :], acc, mask=offs_m[:, None] < S)


def custom_kernel(data):
    q, k, v, sm_scale = data
    B, H, S, D = q.shape
    o = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    if o.numel() == 0:
        return o
    BLOCK_M, BLOCK_N = 32, 32
    _attn_fwd[(triton.cdiv(S, BLOCK_M), B * H)](q, k, v, o, sm_scale, S, *q.stride(), *k.stride(), *v.stride(), H,
                                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, D=D)
    return o
