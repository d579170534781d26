"""Matrix multiply out = x @ w (fp32, nn.Linear's weight stored K x N). M = 1 is single-sample decode (a GEMV)."""

import torch


def generate_input(seed: int, m: int, n: int, k: int):
    return torch.randn(m, k, dtype=torch.float32), torch.randn(k, n, dtype=torch.float32) / k**0.5


def ref_kernel(data):
    x, w = data
    return x @ w


tests = [
    {"m": 1, "n": 1, "k": 1},
    {"m": 1, "n": 129, "k": 257},
    {"m": 1, "n": 64, "k": 1000},
    {"m": 33, "n": 65, "k": 17},
    {"m": 65, "n": 33, "k": 129},
]
benchmarks = [{"m": 1, "n": 8192, "k": 8192}, {"m": 4096, "n": 4096, "k": 4096}]


def flops(m, n, k):
    return 2 * m * n * k
