"""Running sum over time of a (T, C) sequence: out = x.cumsum(dim=0) (linear attention / SSM state prefix)."""
import torch


def generate_input(seed: int, t: int, c: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(t, c, generator=g).to(getattr(torch, dtype))


def ref_kernel(x):
    return torch.cumsum(x, dim=0)


tests = [{"t": t, "c": c, "dtype": dt} for dt in ("float32",)
         for t, c in [(1, 1), (127, 64), (1025, 33), (513, 257)]]
benchmarks = [{"t": 32768, "c": 4096, "dtype": "float32"}]
