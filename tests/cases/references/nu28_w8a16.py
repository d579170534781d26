"""W8A16 weight-only int8 matmul: out = x @ (w * scale[:, None]).T + bias.

x: [M, K] fp16/bf16, w: [N, K] int8, scale: [N] (x's dtype), bias: [N] (x's dtype) or None.
"""

import torch


def generate_input(seed: int, m: int, n: int, k: int, dtype: str, bias: bool):
    dt = getattr(torch, dtype)
    x = torch.randn(m, k, dtype=dt)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8)
    # per-output-channel scale: roughly absmax/127 of a unit-normal weight row
    scale = (torch.rand(n) * 0.02 + 0.005).to(dt)
    b = torch.randn(n, dtype=dt) if bias else None
    return x, w, scale, b


def ref_kernel(data):
    x, w, scale, b = data
    wd = w.to(x.dtype) * scale[:, None]
    out = x @ wd.T
    if b is not None:
        out = out + b
    return out


tests = [
    {"m": 1, "n": 127, "k": 129, "dtype": "float16", "bias": True},
    {"m": 1, "n": 257, "k": 1025, "dtype": "bfloat16", "bias": False},
    {"m": 3, "n": 129, "k": 255, "dtype": "bfloat16", "bias": True},
    {"m": 16, "n": 65, "k": 127, "dtype": "float16", "bias": False},
    {"m": 17, "n": 63, "k": 257, "dtype": "float16", "bias": True},
    {"m": 67, "n": 131, "k": 97, "dtype": "bfloat16", "bias": False},
]
# keep the CPU interpreter's fuzzed sizes modest (a 1539x1665 GEMV case took 10 min)
fuzz = {"m": (1, 80), "n": (1, 300), "k": (1, 1100)}
benchmarks = [
    {"m": 1, "n": 4096, "k": 4096, "dtype": "float16", "bias": False},
    {"m": 16, "n": 4096, "k": 4096, "dtype": "float16", "bias": True},
    {"m": 2048, "n": 4096, "k": 4096, "dtype": "bfloat16", "bias": True},
]


def flops(m, n, k, dtype, bias):
    return 2 * m * n * k


def bytes_moved(m, n, k, dtype, bias):
    e = 2
    return m * k * e + n * k + n * e + (n * e if bias else 0) + m * n * e
