"""fp32 matmul, A and B = 10 * U[0, 1): large positive sums show a TF32 dot's 10-bit mantissa (cases.md tf32)."""

import torch


def generate_input(seed, m, n, k):
    return 10 * torch.rand(m, k), 10 * torch.rand(k, n)


def ref_kernel(data):
    a, b = data
    return a @ b


tests = [{"m": 64, "n": 64, "k": 64}, {"m": 65, "n": 33, "k": 80}]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]
input_distributions = ["native"]
contiguous_only = True
# The timing cases (side_stream_*, cached_output_bad) are torch matmuls on purpose: what they test is the timer.
allow_torch = True


def flops(m, n, k):
    return 2 * m * n * k


def bytes_moved(m, n, k):
    return 4 * (m * k + k * n + m * n)
