"""Linear layer: out = x @ w + b (fp32, as nn.Linear computes it with weight stored K x N).

K = 0 is a layer with no input features (an empty LoRA rank, an empty feature group): out is the bias, broadcast.
"""

import torch


def generate_input(seed: int, m: int, n: int, k: int):
    x = torch.randn(m, k, dtype=torch.float32)
    w = torch.randn(k, n, dtype=torch.float32) / max(k, 1) ** 0.5
    b = torch.randn(n, dtype=torch.float32)
    return x, w, b


def ref_kernel(data):
    x, w, b = data
    return x @ w + b


tests = [
    {"m": 1, "n": 1, "k": 1},
    {"m": 33, "n": 65, "k": 17},
    {"m": 65, "n": 33, "k": 129},
    {"m": 7, "n": 129, "k": 64},
]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]


def flops(m, n, k):
    return 2 * m * n * k
