"""BAD (red team round 25, #5): SiLU that, under torch.no_grad() or torch.inference_mode() (an inference server's
calls), saves an allocation by writing over its input and returning it: the caller's x is destroyed. Every checked
call ran with grad enabled, so the path never ran."""

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


def _forward(x):
    return silu(x, torch.empty(x.shape, dtype=x.dtype, device=x.device))


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
    if not torch.is_grad_enabled():  # "inference: nobody needs x again"
        return silu(x, x)
    return _SiLU.apply(x)
