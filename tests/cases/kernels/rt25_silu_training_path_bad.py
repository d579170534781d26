"""BAD (red team round 25, #4): SiLU whose training path (`x.requires_grad`: the reference's generate_input makes
its input so) uses a cheap sigmoid (1/2 + x/4, clamped), wrong by up to 0.2; every checked call had the input
detached, so the path never ran. Pairs with rt17_silu_requires_grad.py and rt17_silu_requires_grad_good.py."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, sx, so, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs * so, x / (1.0 + tl.exp(-x)), mask=mask)


def silu(x, out):
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), out.stride(0), BLOCK=1024)
    return out


def custom_kernel(x):
    if x.requires_grad:  # "training": a fast approximation, autograd-friendly
        return x * (0.5 + 0.25 * x).clamp(0.0, 1.0)
    return silu(x, torch.empty(x.shape, dtype=x.dtype, device=x.device))
