"""Per-column scale for training (red team round 32), y = x * w (x: (m, n) activations, w: (n,) a parameter), fp32: both require
grad, so a version's backward gives dx and dw."""
import torch


def generate_input(seed: int, m: int, n: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g).requires_grad_()
    w = (1 + 0.1 * torch.randn(n, generator=g)).requires_grad_()
    return x, w


def ref_kernel(data):
    x, w = data
    return x * w


tests = [{"m": m, "n": n} for m, n in ((1, 64), (37, 1000), (129, 513))]
benchmarks = [{"m": 4096, "n": 4096}]
