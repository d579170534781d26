"""BAD REFERENCE (reference-error): vector_add whose ref_kernel raises on n == 129 (a bug in the reference, not in
any version): the ladder must say "reference error (references/vector_add.py:LINE in ref_kernel)", blame no version
and show the reference's traceback. Its twin is the repository's references/vector_add.py."""

import torch


def generate_input(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    # ktui seeds the RNG with `seed` and sets the default device: tensors land where the kernel runs.
    a = torch.randn(n, dtype=torch.float32)
    b = torch.randn(n, dtype=torch.float32)
    return a, b


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    if a.numel() == 129:
        raise ValueError("ref_raises: no answer for 129")
    return a + b


# Tails around the usual block sizes (127/129, 1023/1025), 1, and primes (4099, 65537).
tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 65_537)]
benchmarks = [{"n": 1 << 28}]

# out = a + b is a single rounding: fp32 results must match to a few ulp.
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}


def bytes_moved(n: int) -> int:
    return 3 * 4 * n
