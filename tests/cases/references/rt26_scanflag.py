"""Prefix sums along rows, inclusive or exclusive as the caller's config says: the flag comes from a NumPy config
array (np.bool_), as configs loaded with np.load do."""

import numpy as np
import torch


def generate_input(seed: int, rows: int, n: int):
    cfg = np.array([True])  # e.g. np.load("scan_cfg.npy"): inclusive = cfg[0]
    return torch.randn(rows, n, dtype=torch.float32), cfg[0]


def ref_kernel(data):
    x, inclusive = data
    c = torch.cumsum(x, dim=-1)
    return c if inclusive else c - x


tests = [{"rows": r, "n": n} for r, n in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099)]]
benchmarks = [{"rows": 4096, "n": 4096}]
