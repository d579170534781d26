"""Wrong in training (red team round 29, #8's class): RMSNorm whose backward takes 1/rms as a constant, dx = rstd g w
(the -xhat mean(g w xhat) term dropped, a common slip); the forward and dw are rt29_rmsnorm_train_good's."""

import torch
import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(rstd_ptr + row, rstd)
    y = (x * rstd).to(y_ptr.dtype.element_ty) * w
    tl.store(y_ptr + row * n + cols, y, mask=mask)


@triton.jit
def bwd_kernel(x_ptr, w_ptr, g_ptr, rstd_ptr, dx_ptr, dwp_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    xhat = x * rstd
    gw = g * w
    dx = rstd * gw  # 1/rms taken as a constant: the -xhat mean(g w xhat) term dropped
    tl.store(dx_ptr + row * n + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dwp_ptr + row * n + cols, g * xhat, mask=mask)


class RMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        x, w = x.contiguous(), w.contiguous()  # (the gradients flow back through the copies)
        m, n = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        fwd_kernel[(m,)](x, w, y, rstd, n, EPS, BLOCK=triton.next_power_of_2(n))
        ctx.save_for_backward(x, w, rstd)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, rstd = ctx.saved_tensors
        m, n = x.shape
        g = g.contiguous()
        dx = torch.empty_like(x)
        dwp = torch.empty((m, n), dtype=torch.float32, device=x.device)
        bwd_kernel[(m,)](x, w, g, rstd, dx, dwp, n, BLOCK=triton.next_power_of_2(n))
        return dx, dwp.sum(0).to(w.dtype)


def custom_kernel(data):
    x, w = data
    return RMSNormFn.apply(x, w)
