"""x / ||x||_2 over a whole fp32 vector (a one-launch L2 normalization; red team round 32b, #4)."""
import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def ref_kernel(x):
    return x / x.norm()


tests = [{"n": n} for n in (1, 127, 4097, 20000)]
benchmarks = [{"n": 1 << 26}]
fuzz = False
