"""One Adam step in place (torch.optim.Adam's update, fused as apex/torch's fused Adam do): p, m, v written in place.
data = (p, g, m, v, lr, beta1, beta2, eps, step); step is the step number after this update (>= 1)."""

import torch

inplace = (0, 2, 3)


def generate_input(seed: int, n: int):
    p = torch.randn(n)
    g = torch.randn(n) * 1e-2
    m = torch.randn(n) * 1e-2
    v = torch.rand(n) * 1e-4
    return p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 10


def ref_kernel(data):
    p, g, m, v, lr, beta1, beta2, eps, step = data
    m.mul_(beta1).add_(g, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    bc1 = 1 - beta1**step
    bc2 = 1 - beta2**step
    denom = (v.sqrt() / (bc2**0.5)).add_(eps)
    p.addcdiv_(m, denom, value=-lr / bc1)
    return p


tests = [{"n": n} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]
