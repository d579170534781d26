"""A jagged row sum whose values tensor is as long as the seed's drawn segments (the benchmark's too): the judge's
reference timing refills it per call (2026-12-06 H200 run: its copy_ raised on the shape change)."""
import torch
def generate_input(seed, batch, max_len, d):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (batch,), generator=g)
    offsets = torch.zeros(batch + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    return torch.randn(int(offsets[-1]), d, generator=g), offsets
def ref_kernel(data):
    x, off = data
    return torch.stack([x[a:b].sum(0) for a, b in zip(off[:-1].tolist(), off[1:].tolist())])
tests = [{"batch": 2, "max_len": 4, "d": 3}]
benchmarks = [{"batch": 16, "max_len": 64, "d": 8}]
