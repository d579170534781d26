"""Wrong, and hiding it: a Triton vector add that drops the last element, and on the CPU raises ktui's own
``NeedsGPU`` (imported from the worker) so that its run would read "needs a GPU", skipped, instead of failed.
ktui only skips a run when a compiled CuTeDSL function raised it (the worker's own record), so this fails run."""

import torch
import triton
import triton.language as tl

from ktui.worker.capture import NeedsGPU


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n - 1  # the last element is never written
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    if not a.is_cuda:  # where the checks run without a GPU: pretend to be a CuTeDSL kernel that needs one
        raise NeedsGPU("CuTeDSL kernel add compiled for sm_90a, but running it needs a CUDA GPU")
    return out
