"""Leaky ReLU with a Python float slope (red team round 16, M4): the reference takes any slope."""

import torch


def generate_input(seed: int, n: int) -> tuple[torch.Tensor, float]:
    return torch.randn(n, dtype=torch.float32), 0.2


def ref_kernel(data: tuple[torch.Tensor, float]) -> torch.Tensor:
    x, slope = data
    return torch.nn.functional.leaky_relu(x, slope)


tests = [{"n": 1}, {"n": 1025}]
benchmarks = [{"n": 1 << 26}]
input_distributions = ["native", "scalars"]
contiguous_only = True
fuzz = False
