"""GEGLU as Gemma/T5-style FFNs gate: x is (M, 2N); a, b = x[:, :N], x[:, N:]; out = a * gelu_tanh(b), shape (M, N)
(new-user trial 21). Written as a user writes it, with ``F.gelu(approximate="tanh")``, whose ``0.5 b (1 + tanh(y))``
cancels for b far below zero even in float64."""

import torch
import torch.nn.functional as F


def generate_input(seed: int, M: int, N: int, dtype: str):
    x = torch.randn(M, 2 * N, dtype=torch.float32)
    x[:, N:] = x[:, N:] * 2.0 - 5.0  # gates mostly closed: b around -5, where gelu_tanh's tail decides the output
    return (x.to(getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    n = x.shape[-1] // 2
    return x[..., :n] * F.gelu(x[..., n:], approximate="tanh")


tests = [
    {"M": m, "N": n, "dtype": dt}
    for (m, n) in ((1, 1), (3, 127), (5, 129), (2, 1023), (4, 1025), (3, 4099))
    for dt in ("float32", "bfloat16")
]
