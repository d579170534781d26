"""SiLU of an fp32/bf16 vector: out = x * sigmoid(x)."""
import torch
import torch.nn.functional as F


def generate_input(seed: int, n: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).to(getattr(torch, dtype))


def ref_kernel(x):
    return F.silu(x)


tests = [{"n": n, "dtype": dt} for dt in ("float32", "bfloat16") for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 24, "dtype": "bfloat16"}]
