"""Embedding-gradient style scatter-add: out[V, D] = zeros.index_add_(0, idx, src), bf16 and fp32 rows."""
import torch


def generate_input(seed: int, n: int, v: int, d: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, v, (n,), generator=g)
    src = torch.randn(n, d, generator=g).to(getattr(torch, dtype))
    return idx, src, v


def ref_kernel(data):
    idx, src, v = data
    return torch.zeros(v, src.shape[1], dtype=src.dtype, device=src.device).index_add_(0, idx, src)


tests = [{"n": n, "v": v, "d": d, "dtype": dt} for dt in ("float32", "bfloat16")
         for n, v, d in [(1, 1, 1), (127, 16, 64), (257, 50, 129), (1025, 300, 32)]]
benchmarks = [{"n": 65536, "v": 32000, "d": 1024, "dtype": "bfloat16"}]
