"""GOOD twin of rt10_thread_detect_bad.py: branches on the thread it is called from as well (a larger block on the
main thread, as a tuning choice made once per thread) and computes every element on either path."""

import threading

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, xs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * xs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    block = 1024 if threading.current_thread() is threading.main_thread() else 256
    scale_kernel[(triton.cdiv(x.numel(), block),)](x, out, alpha, x.numel(), x.stride(0), BLOCK=block)
    return out
