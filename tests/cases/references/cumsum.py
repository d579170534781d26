"""Inclusive prefix sum of a vector, fp32 (torch.cumsum)."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, dim=0)


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
