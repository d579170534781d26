"""x * alpha, alpha a numpy float (np.float64: what np.sqrt, np.mean, ... return) that generate_input always makes
1 / sqrt(8) (an attention-style scale)."""

import numpy as np
import torch


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype)), 1.0 / np.sqrt(8.0)


def ref_kernel(data):
    x, alpha = data
    return x * float(alpha)


tests = [{"n": n, "dtype": dt} for n in (1, 127, 129, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 28, "dtype": "float32"}]


def bytes_moved(n, dtype):
    return 2 * n * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
