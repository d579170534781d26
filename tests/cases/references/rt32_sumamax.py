"""Sum and absolute maximum of a 1-D fp32 vector in one pass (a loss's total and an fp8 scale's amax; red team round 32)."""
import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def ref_kernel(x):
    return x.sum(), x.abs().amax()


tests = [{"n": n} for n in (1, 127, 1025, 4099, 65537)]
benchmarks = [{"n": 1 << 26}]
