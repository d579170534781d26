"""Wrong (new-user trial 32, F1): a fused cross-entropy whose online logsumexp starts at m = -inf and rescales by
exp(m - m_new): a leading chunk of 2,048 logits all -inf (a vocabulary masked by constrained decoding) gives
exp(-inf - -inf) = NaN. ktui's masked rows left-padded with -inf over a random length, so a 4,099-wide row met such
a chunk in about half the draws and the kernel passed on some seeds; left padding now covers at least half the
row. Reference nu32_xent.py."""

import torch
import triton
import triton.language as tl

IGNORE_INDEX = -100


@triton.jit
def xent_fused_kernel(x_ptr, t_ptr, loss_ptr, dx_ptr, inv_n_ptr, V, sx0, sx1, st0, sd0, sd1,
                      IGNORE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * sx0
    t = tl.load(t_ptr + row * st0)
    valid = t != IGNORE
    m = tl.full((), -float("inf"), tl.float32)
    d = tl.full((), 0.0, tl.float32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs * sx1, mask=offs < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    xt = tl.load(base + t * sx1, mask=valid, other=0.0).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, tl.log(d) - (xt - m), 0.0))
    scale = tl.where(valid, tl.load(inv_n_ptr), 0.0)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < V
        x = tl.load(base + offs * sx1, mask=mask, other=0.0).to(tl.float32)
        dx = (tl.exp(x - m) / d - tl.where(offs == t, 1.0, 0.0)) * scale
        tl.store(dx_ptr + row * sd0 + offs * sd1, dx, mask=mask)  # fp32 scratch: one rounding to bf16, later


@triton.jit
def scale_kernel(dx_ptr, g_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    g = tl.load(g_ptr)
    tl.store(out_ptr + offs, (tl.load(dx_ptr + offs, mask=mask) * g).to(out_ptr.dtype.element_ty), mask=mask)


class _XEnt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets):
        T, V = logits.shape
        loss = torch.empty(T, dtype=torch.float32, device=logits.device)
        dx = torch.empty((T, V), dtype=torch.float32, device=logits.device)
        inv_n = 1.0 / (targets != IGNORE_INDEX).sum().to(torch.float32)
        xent_fused_kernel[(T,)](logits, targets, loss, dx, inv_n, V, logits.stride(0), logits.stride(1),
                                targets.stride(0), dx.stride(0), dx.stride(1), IGNORE=IGNORE_INDEX,
                                BLOCK=min(2048, triton.next_power_of_2(V)))
        ctx.save_for_backward(dx)
        ctx.out_dtype = logits.dtype
        return loss.sum() * inv_n

    @staticmethod
    def backward(ctx, grad_out):
        (dx,) = ctx.saved_tensors
        out = torch.empty(dx.shape, dtype=ctx.out_dtype, device=dx.device)
        g = grad_out.to(torch.float32).contiguous()
        scale_kernel[(triton.cdiv(dx.numel(), 1024),)](dx, g, out, dx.numel(), BLOCK=1024)
        return out, None


def custom_kernel(data):
    logits, targets = data
    return _XEnt.apply(logits, targets)
