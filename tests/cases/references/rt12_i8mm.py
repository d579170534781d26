"""int8 GEMM: c = a @ b with int8 operands and an exact int32 result (the W8A8 linear layer's core)."""

import torch


def generate_input(seed: int, m: int, n: int, k: int):
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    return a, b


def ref_kernel(data):
    a, b = data
    # in float64 (exact: |c| < 2**26 here), then int32: CUDA has no integer matmul (on the H200, int32 @ int32 raised
    # '"addmm_cuda" not implemented for 'Int'')
    return (a.to(torch.float64) @ b.to(torch.float64)).to(torch.int32)


tests = [{"m": m, "n": n, "k": k} for m, n, k in ((1, 1, 1), (33, 65, 63), (64, 127, 129), (129, 64, 1024))]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]


def flops(m, n, k):
    return 2 * m * n * k


def bytes_moved(m, n, k):
    return m * k + k * n + 4 * m * n
