"""SiLU, F.silu(x), fp32 and bf16: an MLP activation used in training and inference alike (the input requires grad,
as an activation in training does: ktui's grad=requires_grad cases give it back to the kernel)."""

import torch
import torch.nn.functional as F


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype), requires_grad=True)


def ref_kernel(x):
    return F.silu(x)


tests = [{"n": n, "dtype": dt} for n in (1, 127, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "bfloat16"}]
