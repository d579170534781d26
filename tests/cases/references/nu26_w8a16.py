"""New-user trial 26 (F2): w8a16, weight-only int8 quantized matmul. out[M, N] = x[M, K] @ (w[K, N] * scale[N]), x and scale bf16/fp16,
w int8, fp32 accumulation, output in x's dtype."""

import torch


def generate_input(seed: int, m: int, n: int, k: int, dtype: str):
    dt = getattr(torch, dtype)
    x = torch.randn(m, k, dtype=torch.float32).to(dt)
    w = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    scale = (torch.rand(n, dtype=torch.float32) * 0.02 + 0.001).to(dt)
    return x, w, scale


def ref_kernel(data):
    x, w, scale = data
    # compute dtype: fp32 for half types, float64 when ktui runs the reference in float64
    ct = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    wf = w.to(ct) * scale.to(ct)[None, :]
    return (x.to(ct) @ wf).to(x.dtype)


# M = 1 (decode): x of shape (1, K) stays contiguous under every relayout; N and K odd.
tests = [
    {"m": m, "n": n, "k": k, "dtype": dt}
    for (m, n, k) in [(1, 1, 1), (1, 129, 127), (1, 257, 509), (7, 65, 63)]
    for dt in ("bfloat16",)
]
benchmarks = [{"m": 1, "n": 4096, "k": 4096, "dtype": "bfloat16"}, {"m": 256, "n": 4096, "k": 4096, "dtype": "bfloat16"}]


def flops(m, n, k, dtype):
    return 2 * m * n * k


def bytes_moved(m, n, k, dtype):
    return 2 * m * k + k * n + 2 * n + 2 * m * n
