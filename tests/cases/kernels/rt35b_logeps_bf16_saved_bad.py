"""Wrong (red team round 35b, #5): log(x + eps) with a training path: the forward saves 1 / (x + eps) for the backward, in bf16 (activation memory
halved: saved activations in bf16, as mixed-precision training keeps them)."""

import torch
import triton
import triton.language as tl

EPS = torch.finfo(torch.float32).eps


@triton.jit
def fwd_kernel(x_ptr, y_ptr, r_ptr, n_cols, sx_r, sx_c, eps, SAVE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * sx_r + cols * sx_c, mask=m, other=1.0)
    t = x + eps
    tl.store(y_ptr + row * n_cols + cols, tl.log(t), mask=m)
    if SAVE:
        tl.store(r_ptr + row * n_cols + cols, (1.0 / t).to(tl.bfloat16), mask=m)


@triton.jit
def bwd_kernel(g_ptr, r_ptr, dx_ptr, n_cols, sg_r, sg_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    g = tl.load(g_ptr + row * sg_r + cols * sg_c, mask=m, other=0.0)
    r = tl.load(r_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(dx_ptr + row * n_cols + cols, g * r, mask=m)


BLOCK = 128


def _fwd(x, save):
    rows, cols = x.shape
    y = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    r = torch.empty((rows, cols), dtype=torch.bfloat16, device=x.device) if save else y
    if x.numel():
        fwd_kernel[(rows, triton.cdiv(cols, BLOCK))](x, y, r, cols, x.stride(0), x.stride(1), EPS, SAVE=save, BLOCK=BLOCK)
    return y, r


class LogEps(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y, r = _fwd(x.detach(), True)
        ctx.save_for_backward(r)
        return y

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        rows, cols = r.shape
        dx = torch.empty((rows, cols), dtype=g.dtype, device=g.device)
        if r.numel():
            bwd_kernel[(rows, triton.cdiv(cols, BLOCK))](g, r, dx, cols, g.stride(0), g.stride(1), BLOCK=BLOCK)
        return dx


def custom_kernel(x):
    if torch.is_grad_enabled() and x.requires_grad:
        return LogEps.apply(x)
    return _fwd(x, False)[0]
