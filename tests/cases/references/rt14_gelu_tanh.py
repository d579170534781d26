"""GELU, tanh approximation (as in GPT-2), fp32 and bf16."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    return (torch.randn(n, dtype=getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    return torch.nn.functional.gelu(x, approximate="tanh")


tests = [{"n": n, "dtype": dt} for n in (1, 127, 129, 1023, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "float32"}]
