"""Scatter-add with many duplicate indices: out[idx[i]] += val[i]. Float atomics add in a different order on every
run (cases.md nondeterminism)."""

import torch


def generate_input(seed, n, bins):
    return torch.randint(0, bins, (n,)), torch.randn(n), bins


def ref_kernel(data):
    idx, val, bins = data
    return torch.zeros(bins, dtype=val.dtype, device=val.device).index_add_(0, idx, val)


tests = [{"n": 1 << 20, "bins": 64}]
input_distributions = ["native"]
contiguous_only = True
tolerance = {"float32": {"atol": 1e-3, "rtol": 1e-4}}
