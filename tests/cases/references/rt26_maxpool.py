"""2x2 max pooling of a ReLU with its indices (red team round 26, #6): ``F.max_pool2d(relu(x), 2, 2,
return_indices=True)``. The ReLU's zeros tie within windows, and torch does not say which of equal maxima it
returns: any position of the window holding the maximum is right (``max_unpool2d`` of either answer agrees)."""

import torch
import torch.nn.functional as F


def generate_input(seed: int, n: int, c: int, h: int, w: int):
    return (torch.randn(n, c, h, w, dtype=torch.float32),)


def ref_kernel(data):
    (x,) = data
    return F.max_pool2d(torch.relu(x), 2, 2, return_indices=True)


SIZES = [(1, 1, 2, 2), (1, 3, 8, 130), (2, 4, 17, 33), (1, 2, 64, 64)]
tests = [{"n": n, "c": c, "h": h, "w": w} for n, c, h, w in SIZES]
benchmarks = [{"n": 32, "c": 64, "h": 112, "w": 112}]


def bytes_moved(n: int, c: int, h: int, w: int) -> int:
    return 4 * n * c * h * w + 12 * n * c * (h // 2) * (w // 2)
