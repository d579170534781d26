"""Elementwise complex multiply of spectra with a wide dynamic range (|a|, |b| ~ 1000), complex64: a part of a
product can cancel to far below the product's magnitude, which the fp32 rounding of its terms (~u |a| |b|) is not."""
import torch


def generate_input(seed: int, n: int):
    a = 1000 * torch.randn(n, dtype=torch.complex64)
    b = 1000 * torch.randn(n, dtype=torch.complex64)
    return a, b


def ref_kernel(data):
    a, b = data
    return a * b


tests = [{"n": n} for n in (1, 127, 129, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]
