"""Softmax over a vocabulary (red team round 18 W2): rows of logits up to a 128K vocabulary (Llama 3: 128,256), fp32
and bf16."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str) -> torch.Tensor:
    return (3.0 * torch.randn(rows, cols, dtype=torch.float32)).to(getattr(torch, dtype))


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


_shapes = [(1, 1), (7, 127), (2, 4099)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 4096, "cols": 128256, "dtype": "bfloat16"}]


def bytes_moved(rows: int, cols: int, dtype: str) -> int:
    return 2 * rows * cols * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
