"""Pairs with `tests/cases/references/rt17_silu_requires_grad.py`. Honest: SiLU in fp32 as
torch.nn.functional.silu computes it, in a torch.autograd.Function (the reference's inputs require grad). Fails (false alarm, red team round 17): `run` FAILED with ktui's own
RuntimeError from `ktui/worker/special.py` `near_duplicate_` (`flat[a], flat[b] = vb, va` on the requires_grad leaf),
blamed on the version; nothing the kernel does is involved."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, x / (1.0 + tl.exp(-x)), mask=mask)


def _forward(x):
    n = x.numel()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    return out


class _SiLU(torch.autograd.Function):
    """The forward in Triton, the backward in torch: an output that requires grad where the inputs do (the
    reference's training use; red team round 29, #10)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _forward(x.detach())

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * s * (1 + x * (1 - s))


def custom_kernel(x):
    return _SiLU.apply(x)
