"""int8 GEMM: c = a @ b with int8 operands and an exact int32 result (the W8A8 linear layer's core).

(Red team round 12 W2; the tests' copy: only the intrange distribution.)"""

import torch


def generate_input(seed: int, m: int, n: int, k: int):
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    return a, b


def ref_kernel(data):
    a, b = data
    return a.to(torch.int32) @ b.to(torch.int32)


tests = [{"m": m, "n": n, "k": k} for m, n, k in ((1, 1, 1), (33, 65, 63), (64, 127, 129), (129, 64, 1024))]
input_distributions = ["native", "intrange"]  # the test's: integer extremes, nothing else (quicker)
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]


def flops(m, n, k):
    return 2 * m * n * k


def bytes_moved(m, n, k):
    return m * k + k * n + 4 * m * n
