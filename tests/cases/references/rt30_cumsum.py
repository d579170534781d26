"""1-D inclusive prefix sum in float32 (a running total over a long vector)."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, dim=0)


tests = [{"n": n} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]
