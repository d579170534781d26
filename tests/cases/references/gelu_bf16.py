"""gelu_bf16 (red team round 10): erf GELU of bf16 activations (a bf16-only activation kernel)."""
import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.bfloat16)


def ref_kernel(x):
    return torch.nn.functional.gelu(x)


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]


def bytes_moved(n):
    return 4 * n
