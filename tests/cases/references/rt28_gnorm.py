"""L2 scaling of a 1-D fp32 vector (a gradient-norm clip's last step): out = x / sqrt(sum(x^2) + 1e-12)."""
import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def ref_kernel(x):
    return x / torch.sqrt((x * x).sum() + 1e-12)


tests = [{"n": n} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
