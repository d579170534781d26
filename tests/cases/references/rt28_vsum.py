"""Sum of a 1-D fp32 vector (a loss or norm's final reduction): out = x.sum() as a 0-d tensor."""
import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def ref_kernel(x):
    return x.sum()


tests = [{"n": n} for n in (1, 127, 1025, 4099, 65537)]
benchmarks = [{"n": 1 << 26}]
