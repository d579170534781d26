"""Histogram of activations over a fixed range [-4, 4] (quantization calibration of clipped activations): torch.histc(x, bins, lo, hi), float32
counts; values outside [lo, hi] are ignored, a value equal to hi counts in the last bin."""

import torch


def generate_input(seed: int, n: int, bins: int):
    g = torch.Generator().manual_seed(seed)
    x = 1.5 * torch.randn(n, generator=g)  # activations; a few outside [-4, 4]
    return x, bins, -4.0, 4.0


def ref_kernel(data):
    x, bins, lo, hi = data
    return torch.histc(x, bins=bins, min=lo, max=hi)


tests = [{"n": n, "bins": b} for n, b in ((1, 16), (127, 16), (1025, 64), (4099, 100))]
benchmarks = [{"n": 1 << 26, "bins": 2048}]
