"""Bias + ReLU on an image batch: y = relu(x + b[None, :, None, None]), x of shape (N, C, H, W), fp32."""

import torch


def generate_input(seed: int, n: int, c: int, h: int, w: int):
    return torch.randn(n, c, h, w, dtype=torch.float32), torch.randn(c, dtype=torch.float32)


def ref_kernel(data):
    x, b = data
    return torch.relu(x + b[None, :, None, None])


tests = [
    {"n": n, "c": c, "h": h, "w": w}
    for n, c, h, w in ((1, 3, 2, 1), (2, 3, 5, 127), (2, 5, 3, 129), (3, 7, 4, 33), (2, 16, 9, 31), (1, 17, 13, 67))
]
benchmarks = [{"n": 64, "c": 256, "h": 56, "w": 56}]
