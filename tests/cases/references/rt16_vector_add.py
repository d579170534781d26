"""Vector add (red team round 16, M3): a few small test sizes and the benchmark's 2**28, so that the CPU's ``waves``
draw gives a grid-stride loop capped at 4 programs per SM two waves of blocks of 1024."""

import torch


def generate_input(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, dtype=torch.float32), torch.randn(n, dtype=torch.float32)


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return a + b


tests = [{"n": 1}, {"n": 1025}, {"n": 4099}]
benchmarks = [{"n": 1 << 28}]
input_distributions = ["native"]
contiguous_only = True
