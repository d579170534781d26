"""BAD (red team round 25, #5, the variant that passed with no warning at all): SiLU keyed on `x.is_inference()`
(inputs made under torch.inference_mode(), as an inference server makes them): that path skips the exp for a
cheap sigmoid, wrong by up to 0.2."""

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
    out = _SiLU.apply(x)
    if x.is_inference():
        out.copy_(x * (0.5 + 0.25 * x).clamp(0.0, 1.0))
    return out
