"""A CuTeDSL vector add (kernels/vector_add/v3.py) that catches the error of calling its compiled kernel without a
GPU and answers with torch instead: on the CPU its outputs are torch's, not the kernel's. ktui records the
``NeedsGPU`` itself, so the run is skipped ("needs a GPU ... custom_kernel caught that error"), never passed."""

import torch

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < n:
        gC[i] = gA[i] + gB[i]


@cute.jit
def add(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, n: cutlass.Int32):
    add_kernel(a, b, c, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


_compiled = {}


def _t(x: torch.Tensor):
    return from_dlpack(x, assumed_align=16).mark_layout_dynamic()


def custom_kernel(data):
    a, b = data
    if not a.is_contiguous() or not b.is_contiguous() or a.data_ptr() % 16 or b.data_ptr() % 16:
        raise ValueError("unsupported layout: a and b must be contiguous and 16-byte aligned")
    out = torch.empty_like(a)
    n = a.numel()
    fn = _compiled.get(a.dtype)
    if fn is None:
        fn = _compiled[a.dtype] = cute.compile(add, _t(a), _t(b), _t(out), n)
    try:
        fn(_t(a), _t(b), _t(out), n)
    except RuntimeError:
        out = a + b  # torch, not the kernel
    return out
