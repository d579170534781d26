"""Row softmax (fp32), small shapes for a CPU red-team run."""
import torch


def generate_input(seed: int, rows: int, cols: int) -> torch.Tensor:
    return 3.0 * torch.randn(rows, cols, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (7, 127), (5, 129), (3, 1025), (2, 1023))]
benchmarks = [{"rows": 4096, "cols": 4096}]
