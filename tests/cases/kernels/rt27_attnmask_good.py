"""Honest twin of rt27_attnmask_nan_bad: flash attention (online softmax over key blocks) whose running maximum is
kept finite while every key seen so far is masked (FlashAttention-2's m_safe): a fully masked key block adds
nothing."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_kernel(q_ptr, k_ptr, v_ptr, m_ptr, o_ptr, sq_b, sq_h, sq_s, sq_d, sk_b, sk_h, sk_s, sk_d,
                sv_b, sv_h, sv_s, sv_d, sm_b, sm_s, so_b, so_h, so_s, so_d, heads, seq, scale,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    pid_m, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // heads, bh % heads
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + b * sq_b + h * sq_h + rm[:, None] * sq_s + rd[None, :] * sq_d, mask=rm[:, None] < seq,
                other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for n0 in range(0, seq, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + b * sk_b + h * sk_h + rn[:, None] * sk_s + rd[None, :] * sk_d, mask=rn[:, None] < seq,
                    other=0.0)
        v = tl.load(v_ptr + b * sv_b + h * sv_h + rn[:, None] * sv_s + rd[None, :] * sv_d, mask=rn[:, None] < seq,
                    other=0.0)
        add = tl.load(m_ptr + b * sm_b + rn * sm_s, mask=rn < seq, other=-float("inf"))
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale + add[None, :]
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)  # every key so far masked: nothing to rescale
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + b * so_b + h * so_h + rm[:, None] * so_s + rd[None, :] * so_d, out, mask=rm[:, None] < seq)


def custom_kernel(data):
    q, k, v, mask = data
    batch, heads, seq, d = q.shape
    out = torch.empty_like(q)
    block_m, block_n = 16, 16
    grid = (triton.cdiv(seq, block_m), batch * heads)
    attn_kernel[grid](q, k, v, mask, out, *q.stride(), *k.stride(), *v.stride(), mask.stride(0), mask.stride(3),
                      *out.stride(), heads, seq, 1.0 / math.sqrt(d), BLOCK_M=block_m, BLOCK_N=block_n, D=d)
    return out
