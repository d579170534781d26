"""Row softmax of fp32 attention scores: out[i, :] = softmax(x[i, :]) (torch.softmax), additive masks included
(red team round 18, W4: a row of -1e9 scores is uniform, not zeros)."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str) -> torch.Tensor:
    x = 3.0 * torch.randn(rows, cols, dtype=torch.float32)
    return x.to(getattr(torch, dtype))


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


tests = [{"rows": r, "cols": c, "dtype": "float32"} for r, c in [(7, 127), (2, 4099), (33, 64)]]
benchmarks = [{"rows": 4096, "cols": 4096, "dtype": "float32"}]
