"""Sum of a vector, returned as a Python float (like a loss value read with .item())."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> float:
    return float(x.sum())


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
