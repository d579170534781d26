"""BAD (red team round 25, #5): SiLU that, under torch.no_grad() or torch.inference_mode() (an inference server's
calls), saves an allocation by writing over its input and returning it: the caller's x is destroyed. Every checked
call ran with grad enabled, so the path never ran."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, sx, so, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * sx, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs * so, x / (1.0 + tl.exp(-x)), mask=mask)


def silu(x, out):
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), out.stride(0), BLOCK=1024)
    return out


def custom_kernel(x):
    if not torch.is_grad_enabled():  # "inference: nobody needs x again"
        return silu(x, x)
    return silu(x, torch.empty(x.shape, dtype=x.dtype, device=x.device))
