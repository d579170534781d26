"""HONEST twin of rt22_shared_state_bad: h_t = decay * h_{t-1} + x_t over time, one program per (batch row, block of D); fp32 state. The final state is
returned as a copy of the last step (honest)."""

import torch
import triton
import triton.language as tl


@triton.jit
def scan_kernel(x_ptr, h0_ptr, out_ptr, decay, T, B, D,
                sxt, sxb, sxd, shb, shd, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    d = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = d < D
    h = tl.load(h0_ptr + b * shb + d * shd, mask=m).to(tl.float32)
    for t in range(T):
        x = tl.load(x_ptr + t * sxt + b * sxb + d * sxd, mask=m).to(tl.float32)
        h = decay * h + x
        tl.store(out_ptr + (t * B + b) * D + d, h.to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, h0, decay = data
    T, B, D = x.shape
    out = torch.empty((T, B, D), dtype=x.dtype, device=x.device)
    grid = (B, triton.cdiv(D, 1024))
    scan_kernel[grid](x, h0, out, decay, T, B, D, x.stride(0), x.stride(1), x.stride(2),
                      h0.stride(0), h0.stride(1), BLOCK=1024)
    return out, out[-1:].clone()
