"""Honest (red team round 28, #12): SiLU launched inside ``with torch.cuda.device(x.device):``, the guard multi-GPU
Triton code wraps its launches in (the launch goes to the tensor's GPU, not the current one), within an NVTX range,
the stream synchronized after. Right on any GPU; on the CPU ``torch.cuda.device(cpu)`` raised "Expected a cuda
device, but got: cpu" and ``synchronize``, ``current_stream`` and ``nvtx.range_push`` raise on a CPU build."""

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * sx, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(x):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    if n == 0:
        return out
    torch.cuda.nvtx.range_push("silu")
    with torch.cuda.device(x.device):
        silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    torch.cuda.current_stream().synchronize()
    torch.cuda.nvtx.range_pop()
    return out
