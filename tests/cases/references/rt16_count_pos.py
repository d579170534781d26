"""How many elements are positive, as a Python int (red team round 16, F1: GPU MODE / KernelBench references often
return counts so): a kernel may keep it on the device as a 0-d tensor of any integer dtype that holds it."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> int:
    return int((x > 0).sum())


tests = [{"n": 1}, {"n": 1025}, {"n": 4099}]
input_distributions = ["native"]
contiguous_only = True
fuzz = False
