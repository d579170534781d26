"""fp32 matmul C = A @ B with A, B ~ N(0, 1) over the matmul example's shapes, K up to 320 (cases.md honest-fp32).

A K = 320 dot product of randn values carries an fp32 rounding error of a few 1e-6 however it is summed, and
some outputs are near zero: a fixed atol = rtol = 1e-5 fails an IEEE-exact fp32 kernel on it (on the shifted
distribution, where the products cancel, by far). The default tolerance follows what the reference computed in
float32 achieves.
"""

import torch


def generate_input(seed, m, n, k):
    return torch.randn(m, k), torch.randn(k, n)


def ref_kernel(data):
    a, b = data
    return a @ b


tests = [
    {"m": 1, "n": 1, "k": 1},
    {"m": 65, "n": 65, "k": 65},
    {"m": 127, "n": 131, "k": 97},
    {"m": 200, "n": 1, "k": 33},
    {"m": 64, "n": 256, "k": 320},
]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]


def flops(m, n, k):
    return 2 * m * n * k


def bytes_moved(m, n, k):
    return 4 * (m * k + k * n + m * n)
