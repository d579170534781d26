"""x / sqrt(mean(x^2) + eps) with a Python float eps (red team round 16, M4): a negated eps makes the reference NaN on
a row of zeros (a 1-element row of 0.0 here), so the scalars cases only multiply it by 8."""

import torch


def generate_input(seed: int, n: int) -> tuple[torch.Tensor, float]:
    x = torch.randn(n, dtype=torch.float32)
    if n == 1:
        x.zero_()
    return x, 1e-5


def ref_kernel(data: tuple[torch.Tensor, float]) -> torch.Tensor:
    x, eps = data
    return x / torch.sqrt((x * x).mean() + eps)


tests = [{"n": 1}, {"n": 1025}]
input_distributions = ["native", "scalars"]
fuzz = False
