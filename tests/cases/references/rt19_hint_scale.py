"""Scale a vector: out = x * alpha (fp32). x may be any 1-D view (a stride-2 slice, an expanded scalar) (red team
round 19, W1)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32), 1.5


def ref_kernel(data):
    x, alpha = data
    return x * alpha


tests = [{"n": n} for n in (127, 4096, 4099)]
benchmarks = [{"n": 1 << 24}]
