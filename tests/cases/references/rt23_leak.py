"""Scaled add: out = a + alpha * b, fp32."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32), torch.randn(n, dtype=torch.float32), 0.5


def ref_kernel(data):
    a, b, alpha = data
    return a + alpha * b


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
