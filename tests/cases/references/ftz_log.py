"""log|x| in float32 (the FTZ rule, ``ktui.worker.ftz``): on the ``extreme`` family's subnormal inputs torch's log
gives about -92 while a kernel calling libdevice's logf gets -inf on the GPU (Triton links libdevice with
``__CUDA_FTZ=1``: a float32 subnormal argument counts as zero), as the interpreter computes it on the CPU."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    return torch.randn(n, dtype=torch.float32)


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.log(x.abs())


tests = [{"n": 1}, {"n": 4099}]
input_distributions = ["native", "extreme"]
contiguous_only = True
fuzz = False
