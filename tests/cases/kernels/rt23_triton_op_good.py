"""Honest: the Triton kernel wrapped as a PyTorch custom operator (torch.library.triton_op + wrap_triton, PyTorch's
documented way to make a Triton kernel visible to torch.compile and to the dispatcher), called from custom_kernel."""

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def axpy_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs * sa, mask=m)
    b = tl.load(b_ptr + offs * sb, mask=m)
    tl.store(out_ptr + offs, a + alpha * b, mask=m)


@triton_op("rt23lib::axpy", mutates_args=())
def axpy(a: torch.Tensor, b: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    wrap_triton(axpy_kernel)[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), alpha, BLOCK=1024)
    return out


def custom_kernel(data):
    a, b, alpha = data
    return torch.ops.rt23lib.axpy(a, b, alpha)
