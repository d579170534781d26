"""Jagged segment mean (recsys pooling, MoE per-expert means): x (T, D) rows grouped by sorted offsets (B + 1,);
out[b] = mean of x[off[b]:off[b+1]], 0 for an empty segment (a bag with no items, an expert with no tokens)."""

import torch


def generate_input(seed: int, batch: int, max_len: int, d: int, dtype: str):
    lengths = torch.randint(1, max_len + 1, (batch,))
    offsets = torch.zeros(batch + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    x = torch.randn(int(offsets[-1]), d, dtype=getattr(torch, dtype))
    return x, offsets


def ref_kernel(data):
    x, offsets = data
    lengths = offsets[1:] - offsets[:-1]
    seg = torch.repeat_interleave(torch.arange(lengths.numel(), device=x.device), lengths)
    out = torch.zeros(lengths.numel(), x.shape[1], dtype=x.dtype, device=x.device)
    out.index_add_(0, seg, x)
    return out / lengths.clamp(min=1).to(x.dtype)[:, None]


tests = [
    {"batch": b, "max_len": m, "d": d, "dtype": dt}
    for b, m, d in ((1, 1, 1), (4, 17, 127), (7, 33, 129), (3, 64, 257))
    for dt in ("float32", "bfloat16")
]
benchmarks = [{"batch": 1024, "max_len": 256, "d": 512, "dtype": "bfloat16"}]
