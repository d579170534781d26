"""Vector add in CuTeDSL: one element per thread, 256 threads per block, bounds-checked tail.

The compiled kernel is cached per dtype; shapes are dynamic (mark_layout_dynamic), so one compile serves every n.
"""

import torch

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

import ktui.trace.cute as kt  # region markers for the trace rung: no-ops in every other build

THREADS = 256


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    with kt.region("add"):
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
    for name, t in (("a", a), ("b", b)):
        if not t.is_contiguous() or t.data_ptr() % 16:
            # This version assumes dense, 16-byte aligned vectors: say so instead of computing garbage.
            raise ValueError(f"unsupported layout: {name} must be contiguous and 16-byte aligned "
                             f"(stride {t.stride()}, address {t.data_ptr():#x})")
    out = torch.empty_like(a)
    n = a.numel()
    fn = _compiled.get(a.dtype)
    if fn is None:
        fn = _compiled[a.dtype] = cute.compile(add, _t(a), _t(b), _t(out), n)
    fn(_t(a), _t(b), _t(out), n)
    return out
