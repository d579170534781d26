"""out = x * scale + y (fp32), its inputs in a dataclass: a reference's typed record, which every check must reach
as it reaches a tuple's tensors (red team round 8: a tensor inside one was seen only through its shortened repr)."""

from dataclasses import dataclass

import torch


@dataclass
class Inputs:
    x: torch.Tensor
    y: torch.Tensor
    scale: float


def generate_input(seed: int, n: int) -> Inputs:
    return Inputs(torch.randn(n, dtype=torch.float32), torch.randn(n, dtype=torch.float32), 1.5)


def ref_kernel(data: Inputs) -> torch.Tensor:
    return data.x * data.scale + data.y


tests = [{"n": n} for n in (1, 129, 4099)]
benchmarks = [{"n": 1 << 20}]
input_distributions = ["native"]
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-6}}
