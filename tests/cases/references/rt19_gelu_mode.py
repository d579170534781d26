"""GELU with the approximation as an argument, as torch.nn.functional.gelu takes it: out = gelu(x, approximate)
(red team round 19, W5: the str argument has one value in every spec)."""

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.float32), "tanh"


def ref_kernel(data):
    x, approximate = data
    return torch.nn.functional.gelu(x, approximate=approximate)


tests = [{"n": n} for n in (127, 1025)]
benchmarks = [{"n": 1 << 24}]
