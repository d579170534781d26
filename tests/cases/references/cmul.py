"""Elementwise complex multiply (a frequency-domain filter: spectrum * transfer function), complex64."""
import torch


def generate_input(seed: int, n: int):
    a = torch.randn(n, dtype=torch.complex64)
    b = torch.randn(n, dtype=torch.complex64)
    return a, b


def ref_kernel(data):
    a, b = data
    return a * b


tests = [{"n": n} for n in (1, 127, 129, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]
