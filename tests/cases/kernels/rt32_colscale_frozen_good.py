"""Honest twin of rt32_colscale_frozen_flat_bad.py: the backward makes its gradient contiguous before either path
(frozen weight or not) reads it flat."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def mul_kernel(a_ptr, w_ptr, out_ptr, total, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs % N, mask=mask, other=0.0)
    tl.store(out_ptr + offs, a * w, mask=mask)


@triton.jit
def colsum_kernel(g_ptr, x_ptr, dw_ptr, M, N, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for r in range(0, M):
        g = tl.load(g_ptr + r * N + cols, mask=cm, other=0.0)
        x = tl.load(x_ptr + r * N + cols, mask=cm, other=0.0)
        acc += g * x
    tl.store(dw_ptr + cols, acc, mask=cm)


def _mul(a, w):
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    total = out.numel()
    if total:
        mul_kernel[(triton.cdiv(total, BLOCK),)](a, w, out, total, a.shape[-1], BLOCK=BLOCK)
    return out


class ColScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        x, w = x.contiguous(), w.contiguous()
        ctx.save_for_backward(x, w)
        return _mul(x, w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        dx = dw = None
        g = g.contiguous()  # whatever its layout, before either path reads it flat
        if not ctx.needs_input_grad[1]:
            # frozen weight: dx = g * w, one elementwise launch
            return _mul(g, w), None
        if ctx.needs_input_grad[0]:
            dx = _mul(g, w)
        m, n = x.shape
        dw = torch.empty_like(w)
        if n:
            colsum_kernel[(triton.cdiv(n, 128),)](g, x, dw, m, n, BLOCK_N=128)
        return dx, dw


def custom_kernel(data):
    x, w = data
    if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad):
        return ColScale.apply(x, w)
    x, w = x.contiguous(), w.contiguous()
    return _mul(x, w)
