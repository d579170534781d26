"""out = 2 * x + 1 on rows (fp32): a small 2-D elementwise op, so the padded, offset and expanded layouts apply
(red team round 8)."""

import torch


def generate_input(seed: int, rows: int, cols: int) -> torch.Tensor:
    return torch.randn(rows, cols, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return 2 * x + 1


tests = [{"rows": r, "cols": c} for r, c in [(3, 5), (7, 129), (4, 1025)]]
benchmarks = [{"rows": 1024, "cols": 1024}]
input_distributions = ["native"]
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}
