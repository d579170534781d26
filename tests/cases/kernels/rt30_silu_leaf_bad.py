"""Wrong (red team round 30, #4): SiLU in one Triton launch; the output keeps the input's requires_grad so it can go on into a training graph."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if n:
        silu_kernel[(triton.cdiv(n, 1024),)](x.detach(), out, n, x.stride(0), BLOCK=1024)
    if x.requires_grad and torch.is_grad_enabled():
        out.requires_grad_(True)  # keep the autograd flag of the input
    return out
