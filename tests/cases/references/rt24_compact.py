"""Stream compaction: the positive elements of x in order (x[x > 0]); the output's length depends on the data."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0]


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 65_537)]
benchmarks = [{"n": 1 << 24}]
