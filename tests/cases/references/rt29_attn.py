"""Attention with an explicit softmax scale (sm_scale, as FlashAttention's and SDPA's `scale=` take it):
out = softmax(q k^T * sm_scale) v, q, k, v float32 [batch, heads, seq, head_dim]."""

import torch


def generate_input(seed: int, batch: int, heads: int, seq: int, head_dim: int):
    q, k, v = (torch.randn(batch, heads, seq, head_dim) for _ in range(3))
    return q, k, v, head_dim ** -0.5


def ref_kernel(data):
    q, k, v, sm_scale = data
    return torch.softmax((q @ k.transpose(-1, -2)) * sm_scale, dim=-1) @ v


tests = [{"batch": 1, "heads": 2, "seq": s, "head_dim": 16} for s in (1, 17, 40, 64)]
benchmarks = [{"batch": 8, "heads": 16, "seq": 4096, "head_dim": 64}]
fuzz = {"batch": (1, 2), "heads": (1, 2), "seq": (1, 128)}  # head_dim stays 16 (tl.dot takes 16 and up)
