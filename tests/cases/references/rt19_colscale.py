"""Column scale: out = x * w[None, :] (fp32), e.g. a per-channel dequantization scale (red team round 19, W4)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols, dtype=torch.float32), torch.rand(cols, dtype=torch.float32) + 0.5


def ref_kernel(data):
    x, w = data
    return x * w[None, :]


tests = [{"rows": r, "cols": c} for r, c in ((3, 127), (2, 4099), (33, 64))]
benchmarks = [{"rows": 8192, "cols": 8192}]
