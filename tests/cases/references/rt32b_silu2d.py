"""SiLU on (rows, cols) activations, fp32 and bf16, in training (the input requires grad) and inference (red team round 32b)."""
import torch
import torch.nn.functional as F


def generate_input(seed: int, rows: int, cols: int, dtype: str):
    return torch.randn(rows, cols, dtype=getattr(torch, dtype), requires_grad=True)


def ref_kernel(x):
    return F.silu(x)


tests = [{"rows": r, "cols": c, "dtype": dt} for r, c in ((1, 1), (3, 127), (5, 1025), (9, 513)) for dt in ("float32", "bfloat16")]
benchmarks = [{"rows": 8192, "cols": 8192, "dtype": "bfloat16"}]
