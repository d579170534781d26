"""Fused Adam step (one pass over p, g, m, v; the bias corrections computed on the host as torch.optim does)."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def adam_kernel(
    p_ptr, g_ptr, m_ptr, v_ptr, n, sp, sg, sm, sv, lr, beta1, beta2, eps, bc1, bc2_sqrt, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs * sp, mask=mask)
    g = tl.load(g_ptr + offs * sg, mask=mask)
    m = tl.load(m_ptr + offs * sm, mask=mask)
    v = tl.load(v_ptr + offs * sv, mask=mask)
    m = m * beta1 + g * (1 - beta1)
    v = v * beta2 + g * g * (1 - beta2)
    denom = tl.sqrt(v) / bc2_sqrt + eps
    p = p - (lr / bc1) * m / denom
    tl.store(p_ptr + offs * sp, p, mask=mask)
    tl.store(m_ptr + offs * sm, m, mask=mask)
    tl.store(v_ptr + offs * sv, v, mask=mask)


def custom_kernel(data):
    p, g, m, v, lr, beta1, beta2, eps, step = data
    n = p.numel()
    if n:
        bc1 = 1 - beta1**step
        bc2_sqrt = math.sqrt(1 - beta2**step)
        adam_kernel[(triton.cdiv(n, 1024),)](
            p,
            g,
            m,
            v,
            n,
            p.stride(0),
            g.stride(0),
            m.stride(0),
            v.stride(0),
            lr,
            beta1,
            beta2,
            eps,
            bc1,
            bc2_sqrt,
            BLOCK=1024,
        )
    return p
