"""Matrix multiply C = A @ B in bf16 (fp32 accumulate) and in fp32 on TF32 tensor cores (red team round 21, F2: small
sizes only, for the run rung's shared-memory check of every launch)."""

import torch


def generate_input(seed: int, m: int, n: int, k: int, dtype: str):
    dt = getattr(torch, dtype)
    return torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)


def ref_kernel(data):
    a, b = data
    return a @ b


tests = [{"m": 65, "n": 65, "k": 65, "dtype": dt} for dt in ("bfloat16", "float32")]
tolerance = {"float32": {"atol": 3e-2, "rtol": 3e-2}}  # fp32 inputs run as TF32 (10-bit mantissas), as torch allows
