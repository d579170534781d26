"""Attention scores in float16: s = q @ k.T for one head, q (m, d), k (n, d), d the head dim (64 or 128)."""

import torch


def generate_input(seed: int, m: int, n: int, d: int):
    q = torch.randn(m, d, dtype=torch.float32).to(torch.float16)
    k = torch.randn(n, d, dtype=torch.float32).to(torch.float16)
    return q, k


def ref_kernel(data):
    q, k = data
    return q @ k.T


tests = [{"m": m, "n": n, "d": d} for m, n in ((1, 1), (33, 65), (64, 127), (129, 200)) for d in (64, 128)]
benchmarks = [{"m": 8192, "n": 8192, "d": 128}]
fuzz = {"m": (1, 1 << 14), "n": (1, 1 << 14)}  # head dims are 64 or 128


def flops(m, n, d):
    return 2 * m * n * d


def bytes_moved(m, n, d):
    return 2 * (m * d + n * d + m * n)
