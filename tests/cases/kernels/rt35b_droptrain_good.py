"""Honest twin (red team round 35b, #1): dropout with a training path that saves the generator's state before the
draw and draws the same uniforms again in the backward."""

import torch
import triton
import triton.language as tl


@triton.jit
def drop_kernel(x_ptr, u_ptr, out_ptr, n, stride, p, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m)
    u = tl.load(u_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(u >= p, x * scale, 0.0), mask=m)


def _apply(x, u, p):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        drop_kernel[(triton.cdiv(n, 1024),)](x, u, out, n, x.stride(0), p, 1.0 / (1.0 - p), BLOCK=1024)
    return out


class DropoutFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p, g):
        state = g.get_state()  # before the draw: the backward draws the same uniforms again
        u = torch.rand(x.shape, dtype=x.dtype, device=x.device, generator=g)
        ctx.p, ctx.state, ctx.shape = p, state, x.shape
        return _apply(x.detach(), u, p)

    @staticmethod
    def backward(ctx, grad):
        # recompute the mask instead of keeping it (memory): draw the uniforms again
        g = torch.Generator(device=grad.device)
        g.set_state(ctx.state)
        u = torch.rand(ctx.shape, dtype=grad.dtype, device=grad.device, generator=g)
        return _apply(grad.contiguous(), u, ctx.p), None, None


def custom_kernel(data):
    x, p, g = data
    if torch.is_grad_enabled() and x.requires_grad:
        return DropoutFn.apply(x, p, g)
    u = torch.rand(x.shape, dtype=x.dtype, device=x.device, generator=g)
    return _apply(x, u, p)
