"""Row softmax (red team round 16, M1): a few small test specs and the benchmark's 8192 rows, so that the CPU's
``waves`` draw (``ktui.worker.fuzz._draw_waves``) gives a persistent kernel more rows than the H200's 132 SMs."""

import torch


def generate_input(seed: int, rows: int, cols: int) -> torch.Tensor:
    return 3.0 * torch.randn(rows, cols, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


tests = [{"rows": 1, "cols": 1}, {"rows": 7, "cols": 127}, {"rows": 33, "cols": 64}]
benchmarks = [{"rows": 8192, "cols": 8192}]
input_distributions = ["native"]
contiguous_only = True
