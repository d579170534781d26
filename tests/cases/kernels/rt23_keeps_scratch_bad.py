"""Bad: right answers, but every call keeps a scratch buffer (and its inputs) alive in a module-level list that is
never freed: memory grows by ~4 x n x 4 bytes per call, so a training loop runs out of memory after enough steps."""

import torch
import triton
import triton.language as tl

_history = []  # "workspace pool": grows by one entry per call, never trimmed


@triton.jit
def axpy_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs * sa, mask=m)
    b = tl.load(b_ptr + offs * sb, mask=m)
    tl.store(out_ptr + offs, a + alpha * b, mask=m)


def custom_kernel(data):
    a, b, alpha = data
    scratch = torch.empty((4, a.numel()), dtype=a.dtype, device=a.device)
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    axpy_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), alpha, BLOCK=1024)
    _history.append((scratch, a, b))  # never released
    return out
