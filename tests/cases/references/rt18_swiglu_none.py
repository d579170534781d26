"""A module forward in Hugging Face style (red team round 18 F4): (hidden, attn_weights) with attn_weights None when
they are not asked for, as nn.MultiheadAttention(need_weights=False) returns (attn_output, None). The op: SwiGLU's
gate h = silu(g) * u on the two halves of the last dimension."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 2 * cols, generator=g).to(getattr(torch, dtype))


def ref_kernel(x):
    g, u = x.chunk(2, dim=-1)
    return torch.nn.functional.silu(g) * u, None


tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in [(1, 1), (7, 127), (2, 1025)]]
benchmarks = [{"rows": 64, "cols": 1024, "dtype": "bfloat16"}]
