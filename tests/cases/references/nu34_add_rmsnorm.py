"""Fused residual add + RMSNorm, as vLLM's fused_add_rms_norm (a transformer block's pre-norm; new-user trial 34).

    residual <- x + residual                     (in place, as vLLM does)
    out       = residual * rsqrt(mean(residual^2, -1) + eps) * weight

x, residual: [tokens, hidden] bf16; weight: [hidden] bf16. Returns (out, residual): out is a new tensor, residual
is the caller's tensor updated in place (declared in `inplace`).
"""

import torch


def generate_input(seed: int, tokens: int, hidden: int):
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16)
    residual = torch.randn(tokens, hidden, dtype=torch.bfloat16)
    weight = (1.0 + 0.1 * torch.randn(hidden)).to(torch.bfloat16)
    return x, residual, weight, 1e-6


def ref_kernel(data):
    x, residual, weight, eps = data
    residual.add_(x)
    var = residual.pow(2).mean(dim=-1, keepdim=True)
    out = residual * torch.rsqrt(var + eps) * weight
    return out, residual


inplace = (1,)

# hidden: the model sizes 1024 and 4096, and the tails (1, 127, 1025, a prime 4099); tokens: 1 and a few.
_shapes = [(1, 1), (3, 127), (4, 1024), (2, 1025), (3, 4096), (2, 4099)]
tests = [{"tokens": t, "hidden": h} for t, h in _shapes]
benchmarks = [{"tokens": 8192, "hidden": 4096}, {"tokens": 8192, "hidden": 1024}]  # timed on a GPU only


def bytes_moved(tokens, hidden):  # read x, residual, weight; write out and residual (bf16)
    return (4 * tokens * hidden + hidden) * 2
