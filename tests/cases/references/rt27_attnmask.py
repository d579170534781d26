"""Attention with an additive key mask (red team round 27, #6): out = softmax(q k^T / sqrt(d) + mask) v, q, k, v
float32 [batch, heads, seq, head_dim], mask float32 [batch, 1, 1, seq] holding 0 for a kept key and -inf for a
padded one. generate_input pads on the right (as a batch of prompts); batched generation pads on the left, where a
kernel's whole first key block can be masked."""

import math

import torch


def generate_input(seed: int, batch: int, heads: int, seq: int, head_dim: int):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, seq, head_dim, generator=g) for _ in range(3))
    lengths = torch.randint(1, seq + 1, (batch,), generator=g)
    keep = torch.arange(seq)[None, :] < lengths[:, None]
    mask = torch.where(keep, 0.0, -math.inf).reshape(batch, 1, 1, seq)
    return q, k, v, mask


def ref_kernel(data):
    q, k, v, mask = data
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + mask
    return torch.softmax(scores, dim=-1) @ v


tests = [
    {"batch": 2, "heads": 2, "seq": s, "head_dim": 16} for s in (17, 40, 64)
]
benchmarks = [{"batch": 8, "heads": 16, "seq": 1024, "head_dim": 64}]
fuzz = {"batch": (1, 8), "heads": (1, 4), "seq": (1, 256)}  # head_dim stays 16 (tl.dot takes 16 and up)
