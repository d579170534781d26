"""Wrong (red team round 33, #3): rt32b_silu2d_contig_good.py whose backward reads any gradient with a stride of 0 as
one value (g[0] everywhere, no materialized gradient for y.sum()), which is wrong for a gradient broadcast along one
dimension only, as y.sum(0), y.mean(0) and y.sum(-1) hand it to the backward: dx off by up to ~5 there. The four
cotangent layouts were contiguous, expanded (stride 0 everywhere), transposed and padded, so "a stride 0 somewhere" and
"stride 0 everywhere" were never told apart; per_row and per_column cotangents now are (``grad_modes.cotangent``).
The honest twin: rt32b_silu2d_contig_good.py."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def silu_fwd_kernel(x_ptr, out_ptr, sig_ptr, n_cols, sx_r, sx_c, SAVE: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = c < n_cols
    x = tl.load(x_ptr + r * sx_r + c * sx_c, mask=m, other=0.0).to(tl.float32)
    s = 1.0 / (1.0 + tl.exp(-x))
    if SAVE:
        tl.store(sig_ptr + r * n_cols + c, s, mask=m)
    tl.store(out_ptr + r * n_cols + c, (x * s).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def silu_bwd_kernel(x_ptr, sig_ptr, g_ptr, dx_ptr, n, G_SCALAR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    s = tl.load(sig_ptr + offs, mask=m, other=0.0)
    if G_SCALAR:  # one gradient value for every element (y.sum(), y.mean()): no materialized gradient
        g = tl.load(g_ptr).to(tl.float32)
    else:
        g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(dx_ptr + offs, (g * s * (1.0 + x * (1.0 - s))).to(dx_ptr.dtype.element_ty), mask=m)


def _fwd(x, save):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    sig = torch.empty((rows, cols), dtype=torch.float32, device=x.device) if save else out
    if out.numel():
        silu_fwd_kernel[(rows, triton.cdiv(cols, BLOCK))](
            x, out, sig, cols, x.stride(0), x.stride(1), SAVE=save, BLOCK=BLOCK
        )
    return out, sig


class SiLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out, sig = _fwd(x, True)
        ctx.save_for_backward(x, sig)
        return out

    @staticmethod
    def backward(ctx, g):
        x, sig = ctx.saved_tensors
        x = x.contiguous()
        g_scalar = 0 in g.stride()  # "a stride-0 gradient is the loss's one value broadcast": not for y.sum(0)
        if not g_scalar:
            g = g.contiguous()
        dx = torch.empty_like(x)
        n = x.numel()
        if n:
            silu_bwd_kernel[(triton.cdiv(n, BLOCK),)](x, sig, g, dx, n, G_SCALAR=g_scalar, BLOCK=BLOCK)
        return dx


def custom_kernel(x):
    if torch.is_grad_enabled() and x.requires_grad:
        return SiLUFn.apply(x)
    return _fwd(x, False)[0]
