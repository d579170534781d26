"""Row L2 normalisation, F.normalize(x, dim=-1) (eps = 1e-12 on the norm): cosine-similarity heads, QK-norm,
normalised embeddings. fp32 in, fp32 out; the row width is the model's head/embedding size (64 or 128)."""

import torch
import torch.nn.functional as F


def generate_input(seed: int, rows: int, d: int):
    return torch.randn(rows, d, dtype=torch.float32)


def ref_kernel(data):
    return F.normalize(data, dim=-1)


tests = [{"rows": r, "d": d} for r in (1, 7, 129, 1000) for d in (64, 128)]
benchmarks = [{"rows": 1 << 20, "d": 128}]
fuzz = {"rows": (1, 1 << 16)}  # d is the model's head size


def valid_spec(spec):
    return spec["d"] in (64, 128)
