"""Multi-label prediction: which labels a classifier predicts, sigmoid(logits) > threshold (a bool mask)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g), 0.5


def ref_kernel(data):
    logits, threshold = data
    return torch.sigmoid(logits) > threshold


tests = [{"rows": r, "cols": c} for r, c in ((1, 127), (7, 257), (33, 1025), (200, 64))]
benchmarks = [{"rows": 8192, "cols": 4096}]
