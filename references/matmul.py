"""Matrix multiply C = A @ B: bf16 inputs, fp32 accumulation, bf16 output (as torch.matmul does for bf16)."""

import torch


def generate_input(seed: int, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.randn(m, k, dtype=torch.float32).to(torch.bfloat16)
    b = torch.randn(k, n, dtype=torch.float32).to(torch.bfloat16)
    return a, b


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return a @ b


# M = N = K = BLOCK + 1 for blocks of 64 and 128, primes, a single element, one row, one column, a K tail.
tests = [
    {"m": 1, "n": 1, "k": 1},
    {"m": 65, "n": 65, "k": 65},
    {"m": 129, "n": 129, "k": 129},
    {"m": 127, "n": 131, "k": 97},
    {"m": 1, "n": 257, "k": 64},
    {"m": 200, "n": 1, "k": 33},
    {"m": 64, "n": 256, "k": 320},
]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]


def flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int) -> int:
    return 2 * (m * k + k * n + m * n)
