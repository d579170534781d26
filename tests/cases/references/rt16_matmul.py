"""bf16 matmul (red team round 16, M2): few test specs, one of 64 x 256 (a tiled problem: ``fuzz.TILE_LEAD``), and the
benchmark's 4096^3, so that the CPU's ``waves`` draw gives a persistent GEMM more tiles than the H200's 132 SMs."""

import torch


def generate_input(seed: int, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.randn(m, k, dtype=torch.float32).to(torch.bfloat16)
    b = torch.randn(k, n, dtype=torch.float32).to(torch.bfloat16)
    return a, b


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return a @ b


tests = [{"m": 1, "n": 1, "k": 1}, {"m": 65, "n": 65, "k": 33}, {"m": 64, "n": 256, "k": 16}]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]
input_distributions = ["native"]
contiguous_only = True
