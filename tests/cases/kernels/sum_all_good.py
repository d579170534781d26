"""Vector sum in one Triton program: blocks of 1024 summed as trees, the block sums accumulated in fp32; returns a 0-d
tensor like torch.sum (honest twin of rt_sum_number)."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs * stride, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(x: torch.Tensor):
    out = torch.empty((), dtype=torch.float32, device=x.device)
    sum_kernel[(1,)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
