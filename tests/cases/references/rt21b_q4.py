"""Per-row int8 fake quantization with a power-of-two scale (MX-style shared exponent), bf16 in, bf16 out:
s = 2 ** (floor(log2(max |x_row|)) - 6); y = clamp(round(x / s), -128, 127) * s (torch.round: half to even)."""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g).to(getattr(torch, dtype))


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    amax = x.abs().amax(dim=-1, keepdim=True)
    s = torch.exp2(torch.floor(torch.log2(amax)) - 6)
    return (torch.round(x / s).clamp(-128, 127) * s).to(x.dtype)


tests = [{"rows": r, "cols": c, "dtype": "bfloat16"} for r, c in [(16, 256), (64, 512), (7, 1000)]]
benchmarks = [{"rows": 64, "cols": 512, "dtype": "bfloat16"}]
input_distributions = ["native", "normal", "uniform"]  # a quantizer's inputs: activations, not heavy tails
