"""BAD (patched-while-timed, GPU; red team issue 9.6): a correct vector add that leaves its worker alone while it is
checked and, from its 300th call on (the benchmark: correctness makes about a hundred), rewrites the code of
ktui's timing summary (``ktui.worker.timing.summarize``) so that every time reported is ten times shorter. Only the
benchmark's integrity call sees it; the run and correctness rungs that worker served fail too."""

import sys

import torch
import triton
import triton.language as tl

def _patch() -> None:
    timing = sys.modules.get("ktui.worker.timing")
    if timing is None or "_red_summarize" in vars(timing):
        return
    g = vars(timing)
    g["_red_summarize"] = type(timing.summarize)(timing.summarize.__code__, g, "summarize")

    def _faster(times_us):
        return _red_summarize([t / 10 for t in times_us])  # noqa: F821 - resolved in ktui.worker.timing's globals

    timing.summarize.__code__ = _faster.__code__


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    calls = sys.__dict__["_red_calls"] = sys.__dict__.get("_red_calls", 0) + 1  # counted across fresh imports
    if calls >= 300:
        _patch()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), a.stride(0), b.stride(0), BLOCK=1024)
    return out
