"""GELU then a 3-tap mean along each row, the ends padded with zeros (a smoothing after an activation; red team round
32b, #3: one program per row staging the GELU through global scratch)."""
import torch


def generate_input(seed: int, rows: int, cols: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g)


def ref_kernel(x):
    y = torch.nn.functional.gelu(x)
    p = torch.nn.functional.pad(y, (1, 1))
    return (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / 3


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (3, 127), (5, 129), (2, 1025))]
benchmarks = [{"rows": 4096, "cols": 1024}]
