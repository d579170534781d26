"""Honest (new-user trial 32): a chunked-vocab cross-entropy with an online logsumexp (running max and rescaled
sum, the max made safe where a whole chunk is -inf), so any vocab fits one program's registers; the backward
recomputes p = exp(x - m) / d chunk by chunk. Reference nu32_xent.py; its twin nu32_xent_lse_nan_bad.py."""

import torch
import triton
import triton.language as tl

IGNORE_INDEX = -100


@triton.jit
def xent_fwd_kernel(x_ptr, t_ptr, loss_ptr, stats_ptr, V, sx0, sx1, st0, IGNORE: tl.constexpr, BLOCK: tl.constexpr):
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
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)  # an all -inf chunk so far: no -inf - -inf
        d = d * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe), axis=0)
        m = m_new
    xt = tl.load(base + t * sx1, mask=valid, other=0.0).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, tl.log(d) - (xt - m), 0.0))
    tl.store(stats_ptr + 2 * row, m)
    tl.store(stats_ptr + 2 * row + 1, d)


@triton.jit
def xent_bwd_kernel(x_ptr, t_ptr, stats_ptr, g_ptr, inv_n_ptr, dx_ptr, V, sx0, sx1, st0, sd0, sd1,
                    IGNORE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    t = tl.load(t_ptr + row * st0)
    m = tl.load(stats_ptr + 2 * row)
    d = tl.load(stats_ptr + 2 * row + 1)
    scale = tl.load(g_ptr) * tl.load(inv_n_ptr)
    scale = tl.where(t != IGNORE, scale, 0.0)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < V
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
        p = tl.exp(x - m) / d
        dx = (p - tl.where(offs == t, 1.0, 0.0)) * scale
        tl.store(dx_ptr + row * sd0 + offs * sd1, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _block(V):
    return min(2048, triton.next_power_of_2(V))


class _XEnt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets):
        T, V = logits.shape
        loss = torch.empty(T, dtype=torch.float32, device=logits.device)
        stats = torch.empty(2 * T, dtype=torch.float32, device=logits.device)
        xent_fwd_kernel[(T,)](logits, targets, loss, stats, V, logits.stride(0), logits.stride(1), targets.stride(0),
                              IGNORE=IGNORE_INDEX, BLOCK=_block(V))
        inv_n = 1.0 / (targets != IGNORE_INDEX).sum().to(torch.float32)
        ctx.save_for_backward(logits, targets, stats, inv_n)
        return loss.sum() * inv_n

    @staticmethod
    def backward(ctx, grad_out):
        logits, targets, stats, inv_n = ctx.saved_tensors
        T, V = logits.shape
        dx = torch.empty_like(logits)
        g = grad_out.to(torch.float32).contiguous()
        xent_bwd_kernel[(T,)](logits, targets, stats, g, inv_n, dx, V, logits.stride(0), logits.stride(1),
                              targets.stride(0), dx.stride(0), dx.stride(1), IGNORE=IGNORE_INDEX, BLOCK=_block(V))
        return dx, None


def custom_kernel(data):
    logits, targets = data
    return _XEnt.apply(logits, targets)
