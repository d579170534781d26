"""Wrong (new-user trial 35, F2): loss = lse - x_t as Liger writes it: on a row of all -1e9 (dist=masked) it cancels to 0 in float32 where torch gives log(V)."""

import torch
import triton
import triton.language as tl


@triton.jit
def xent_fwd_kernel(x_ptr, t_ptr, loss_ptr, lse_ptr, V, stride_xr, stride_xc, stride_t, ignore_index,
                    BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < V
    x = tl.load(x_ptr + row * stride_xr + offs * stride_xc, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    lse = m + tl.log(s)
    t = tl.load(t_ptr + row * stride_t)
    valid = t != ignore_index
    tsafe = tl.where(valid, t, 0)
    xt = tl.load(x_ptr + row * stride_xr + tsafe * stride_xc).to(tl.float32)
    loss = tl.where(valid, lse - xt, 0.0)
    tl.store(loss_ptr + row, loss)
    tl.store(lse_ptr + row, lse)


def custom_kernel(data):
    logits, targets, ignore_index = data
    T, V = logits.shape
    loss = torch.empty(T, dtype=torch.float32, device=logits.device)
    lse = torch.empty(T, dtype=torch.float32, device=logits.device)
    if T == 0:
        return loss, lse
    BLOCK = triton.next_power_of_2(V)
    xent_fwd_kernel[(T,)](logits, targets, loss, lse, V, logits.stride(0), logits.stride(1), targets.stride(0),
                          ignore_index, BLOCK=BLOCK)
    return loss, lse
