"""Jagged row sums: ``values`` holds the segments one after another, ``offsets`` (batch + 1, int64, sorted) where
each starts; every segment has 1 .. max_len elements. Tests include a batch of one (the tails rule)."""
import torch


def generate_input(seed: int, batch: int, max_len: int):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (batch,), generator=g)
    offsets = torch.zeros(batch + 1, dtype=torch.int64)
    offsets[1:] = lengths.cumsum(0)
    values = torch.randn(int(offsets[-1]), generator=g)
    return values, offsets, max_len


def ref_kernel(data):
    values, offsets, max_len = data
    return torch.segment_reduce(values, "sum", offsets=offsets)


tests = [{"batch": b, "max_len": m} for b, m in ((1, 16), (3, 16), (5, 33), (17, 64), (64, 129))]
benchmarks = [{"batch": 4096, "max_len": 1024}]
