"""Wrong (new-user trial 35, F4): ignore_index hard-coded as -100 (as Liger defaults): a caller passing another ignore_index gets class -101 read."""

import torch
import triton
import triton.language as tl


@triton.jit
def xent_fwd_kernel(x_ptr, t_ptr, loss_ptr, lse_ptr, V, stride_xr, stride_xc, stride_t, ignore_index,
                    BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * stride_xr
    m = tl.full((), -float("inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < V
        x = tl.load(base + offs * stride_xc, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe), axis=0)
        m = m_new
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    lse = m_safe + tl.log(s)
    t = tl.load(t_ptr + row * stride_t)
    valid = t != -100
    xt = tl.load(base + tl.where(valid, t, 0) * stride_xc).to(tl.float32)
    loss = tl.where(valid, (m_safe - xt) + tl.log(s), 0.0)
    tl.store(loss_ptr + row, loss)
    tl.store(lse_ptr + row, lse)


def custom_kernel(data):
    logits, targets, ignore_index = data
    T, V = logits.shape
    loss = torch.empty(T, dtype=torch.float32, device=logits.device)
    lse = torch.empty(T, dtype=torch.float32, device=logits.device)
    if T == 0:
        return loss, lse
    BLOCK = min(4096, triton.next_power_of_2(V))
    xent_fwd_kernel[(T,)](logits, targets, loss, lse, V, logits.stride(0), logits.stride(1), targets.stride(0),
                          ignore_index, BLOCK=BLOCK, num_warps=8)
    return loss, lse
