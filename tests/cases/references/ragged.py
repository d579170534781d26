"""Ragged rows: out[r, c] = x[r, c] * 2 for c < lengths[r], else 0 (a padding mask applied to a batch of sequences)."""
import torch


def generate_input(seed: int, rows: int, cols: int):
    x = torch.randn(rows, cols, dtype=torch.float32)
    lengths = torch.randint(0, cols + 1, (rows,), dtype=torch.int32)
    return x, lengths


def ref_kernel(data):
    x, lengths = data
    cols = torch.arange(x.shape[1], device=x.device)
    return torch.where(cols[None, :] < lengths[:, None].to(cols.dtype), x * 2, torch.zeros_like(x))


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64))]
benchmarks = [{"rows": 4096, "cols": 4096}]


def bytes_moved(rows, cols):
    return 8 * rows * cols
