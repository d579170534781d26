"""RMSNorm for training, y = x / sqrt(mean(x^2) + eps) * w over the last dim, fp32 and bf16: both x and the weight
require grad (an activation and a parameter), so a version's backward gives dx and dw (red team round 29, #8: ktui
judges the gradients too)."""

import torch

EPS = 1e-6


def generate_input(seed: int, m: int, n: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype)
    x = torch.randn(m, n, generator=g).to(dt).requires_grad_()
    w = (1 + 0.1 * torch.randn(n, generator=g)).to(dt).requires_grad_()
    return x, w


def ref_kernel(data):
    x, w = data
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return y.to(x.dtype) * w


tests = [{"m": m, "n": n, "dtype": dt} for m, n in ((1, 64), (37, 1000), (129, 513)) for dt in ("float32", "bfloat16")]
benchmarks = [{"m": 4096, "n": 4096, "dtype": "bfloat16"}]
