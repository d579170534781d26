"""HONEST twin of rt23_keeps_scratch_bad: the scaled add with its scratch buffer dropped after each call."""

import torch
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs * sa, mask=m)
    b = tl.load(b_ptr + offs * sb, mask=m)
    tl.store(out_ptr + offs, a + alpha * b, mask=m)


def custom_kernel(data):
    a, b, alpha = data
    scratch = torch.empty((4, a.numel()), dtype=a.dtype, device=a.device)  # a workspace, dropped on return
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    axpy_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), alpha, BLOCK=1024)
    del scratch
    return out
