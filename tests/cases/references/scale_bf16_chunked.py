"""scale_bf16_chunked (red team round 10): out = x * alpha on bf16 activations (a bf16-only kernel)."""
import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.bfloat16), 2.5


def ref_kernel(data):
    x, alpha = data
    return x * alpha


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]


def bytes_moved(n):
    return 4 * n
