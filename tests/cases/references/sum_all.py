"""Sum of a vector: a 0-d fp32 tensor, as torch.sum returns it."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return x.sum()


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
