"""Phase angle: out = atan2(y, x) (fp32), e.g. the angle of complex samples stored as two planes (red team round
19, W3: signed zeros)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32), torch.randn(n, dtype=torch.float32)


def ref_kernel(data):
    y, x = data
    return torch.atan2(y, x)


tests = [{"n": n} for n in (127, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
