"""A vector add whose ref_kernel has a typo (torch.addd): it raises on every spec, the smallest first."""

import torch


def generate_input(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    # ktui seeds the RNG with `seed` and sets the default device: tensors land where the kernel runs.
    a = torch.randn(n, dtype=torch.float32)
    b = torch.randn(n, dtype=torch.float32)
    return a, b


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return torch.addd(a, b)


# Tails around the usual block sizes (127/129, 1023/1025), 1, and primes (4099, 65537).
tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 65_537)]
benchmarks = [{"n": 1 << 28}]

# out = a + b is a single rounding: fp32 results must match to a few ulp.
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}


def bytes_moved(n: int) -> int:
    return 3 * 4 * n
