"""Log-intensity of 8-bit images (red team round 25, #2): ``log(x + finfo(x.dtype).eps)``, the first sixteenth of
each image black. The float64 run reads float64's eps there (truth log(2.2e-16) = -36.04 where any float32 program
gives log(1.19e-7) = -15.94): the reference in float32 is off by 20 on the black pixels and by ~4e-7 elsewhere."""

import torch

input_distributions = ["native"]


def generate_input(seed: int, n: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    pix = torch.randint(1, 256, (n,), generator=g)
    pix[: max(1, n // 16)] = 0
    return ((pix.to(torch.float64) / 255).to(getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    return torch.log(x + torch.finfo(x.dtype).eps)


tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 129, 1023, 4099)]
