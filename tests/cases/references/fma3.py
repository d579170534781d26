"""Fused multiply-add of three vectors: out = a * b + c, fp32 (addcmul)."""
import torch


def generate_input(seed: int, n: int):
    a = torch.randn(n, dtype=torch.float32)
    b = torch.randn(n, dtype=torch.float32)
    c = torch.randn(n, dtype=torch.float32)
    return a, b, c


def ref_kernel(data):
    a, b, c = data
    return a * b + c


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 65_537)]
benchmarks = [{"n": 1 << 28}]



def bytes_moved(n: int) -> int:
    return 4 * 4 * n
