"""Static int4 quantization of bf16 activations (one value per int8): q = clamp(round(x / scale), -8, 7), computed in float32
(x.float()), scale a Python float."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    return torch.randn(rows, cols).to(torch.bfloat16), 0.37


def ref_kernel(data):
    x, scale = data
    return torch.round(x.float() / scale).clamp(-8, 7).to(torch.int8)


tests = [{"rows": r, "cols": c} for r, c in ((1, 127), (7, 257), (33, 129), (16, 512))]
benchmarks = [{"rows": 8192, "cols": 4096}]
