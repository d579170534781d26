"""Honest (new-user trial 34): the residual-add RMSNorm, one program a row, the sum of squares in float32, the
residual written in place. Twin of nu34_add_rmsnorm_bf16_sum_warned.py."""

import torch
import triton
import triton.language as tl


@triton.jit
def fused_kernel(x_ptr, r_ptr, w_ptr, out_ptr, n_cols, eps, x_rs, x_cs, r_rs, r_cs, w_s, o_rs, o_cs,
                 BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_rs + offs * x_cs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * r_rs + offs * r_cs, mask=mask, other=0.0).to(tl.float32)
    h = (x + r).to(r_ptr.dtype.element_ty)
    tl.store(r_ptr + row * r_rs + offs * r_cs, h, mask=mask)
    h = h.to(tl.float32)
    var = tl.sum(h * h, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs * w_s, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * o_rs + offs * o_cs, (h * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, residual, weight, eps = data
    tokens, hidden = x.shape
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out, residual
    block = triton.next_power_of_2(hidden)
    num_warps = min(16, max(4, block // 256))
    fused_kernel[(tokens,)](x, residual, weight, out, hidden, eps, x.stride(0), x.stride(1), residual.stride(0),
                            residual.stride(1), weight.stride(0), out.stride(0), out.stride(1), BLOCK=block,
                            num_warps=num_warps)
    return out, residual
