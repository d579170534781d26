"""Apply a global phase (a carrier rotation) to a complex baseband signal: out = z * w, z complex64 of shape
(rows, n), w a Python complex (e^{i theta}, the rotation a caller passes per call)."""

import cmath

import torch


def generate_input(seed: int, rows: int, n: int):
    z = torch.randn(rows, n, dtype=torch.complex64)
    return z, cmath.exp(0.3j)


def ref_kernel(data):
    z, w = data
    return z * w


tests = [{"rows": r, "n": n} for r, n in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099)]]
benchmarks = [{"rows": 8192, "n": 8192}]
