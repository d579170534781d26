"""Wrong (red team round 35b, #4): SiLU with a training path: the forward saves sigmoid(x) in float32 for the backward. The sigmoid workspaces are
double-buffered per (shape, device): two buffers used in turn, so the next layer's forward never overwrites the
buffer a previous call's backward still needs (no allocation on the hot path). Wrong from a third forward before
the first backward (a model with three such layers)."""
import torch
import triton
import triton.language as tl


@triton.jit
def silu_fwd_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_fwd_train_kernel(x_ptr, out_ptr, sig_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0.0).to(tl.float32)
    s = 1.0 / (1.0 + tl.exp(-x))
    tl.store(sig_ptr + offs, s, mask=mask)
    tl.store(out_ptr + offs, (x * s).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_bwd_kernel(x_ptr, sig_ptr, g_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(sig_ptr + offs, mask=mask, other=0.0)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(dx_ptr + offs, (g * s * (1.0 + x * (1.0 - s))).to(dx_ptr.dtype.element_ty), mask=mask)


BLOCK = 1024
_WS = {}  # (shape, device) -> [two float32 sigmoid workspaces, the next one to use]


class SiLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        n = x.numel()
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        key = (tuple(x.shape), x.device)
        ring = _WS.get(key)
        if ring is None:
            ring = _WS[key] = [[torch.empty(x.shape, dtype=torch.float32, device=x.device) for _ in range(2)], 0]
        sig = ring[0][ring[1]]
        ring[1] ^= 1
        silu_fwd_train_kernel[(triton.cdiv(n, BLOCK),)](x, out, sig, n, x.stride(0), BLOCK=BLOCK)
        ctx.save_for_backward(x, sig)
        return out

    @staticmethod
    def backward(ctx, g):
        x, sig = ctx.saved_tensors
        x, g = x.contiguous(), g.contiguous()  # g may come expanded (a sum loss) or transposed
        dx = torch.empty_like(x)
        n = x.numel()
        silu_bwd_kernel[(triton.cdiv(n, BLOCK),)](x, sig, g, dx, n, BLOCK=BLOCK)
        return dx


def custom_kernel(x):
    if torch.is_grad_enabled() and x.requires_grad:  # training: save sigmoid(x) for the backward
        return SiLUFn.apply(x)
    n = x.numel()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if n:
        silu_fwd_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, x.stride(0), BLOCK=BLOCK)
    return out
