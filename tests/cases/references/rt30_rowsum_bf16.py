"""Row sums of a bf16 activation matrix (bf16 out, fp32 accumulation as torch does)."""

import torch


def generate_input(seed: int, rows: int, cols: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g).to(torch.bfloat16)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=-1)


tests = [{"rows": r, "cols": c} for r, c in ((1, 256), (5, 1000), (8, 1024), (3, 4099), (64, 512), (17, 2048))]
benchmarks = [{"rows": 16384, "cols": 8192}]
