"""Rounded mean of uint8 samples over a window (a box filter over 30/60/120 frames): round(mean(x)) as uint8, the mean
taken in float32 as torch does it (red team round 18, F3: no rounding allowance for integer-only inputs)."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randint(0, 256, (rows, cols), dtype=torch.uint8)


def ref_kernel(x):
    return torch.round(x.float().mean(dim=-1)).to(torch.uint8)


tests = [{"rows": r, "cols": c} for r, c in [(64, 30), (33, 60), (16, 120), (2, 4099)]]
benchmarks = [{"rows": 65536, "cols": 120}]
