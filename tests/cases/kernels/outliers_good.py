"""GOOD (a value-dependent output size): a Triton kernel marks |x| > 2.5, torch.nonzero lists the marks; on the
shifted distribution every element is an outlier, far more than the native case of the same spec."""

import torch
import triton
import triton.language as tl


@triton.jit
def mark_kernel(x_ptr, m_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask, other=0.0)
    tl.store(m_ptr + offs, (tl.abs(x) > 2.5).to(tl.int8), mask=mask)


def custom_kernel(x):
    n = x.numel()
    m = torch.empty(n, dtype=torch.int8, device=x.device)
    mark_kernel[(triton.cdiv(n, 1024),)](x, m, n, x.stride(0), BLOCK=1024)
    return torch.nonzero(m).flatten()
