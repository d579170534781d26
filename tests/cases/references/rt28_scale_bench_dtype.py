"""out = 2 * x + 1; tests in fp32 (to see precision issues clearly), benchmarked in bf16 (how it is used)."""
import torch


def generate_input(seed: int, n: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g).to(getattr(torch, dtype))


def ref_kernel(x):
    return 2 * x + 1


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 24, "dtype": "bfloat16"}]
