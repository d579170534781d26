"""BAD (patched-timer, red team issue 9.6): a correct vector add that, on import, rewrites the code of ktui's timing
summary in its own worker (``ktui.worker.timing.summarize``) so that every time it reports is ten times shorter. The
function object stays the same one, so a check by identity sees nothing; its code digest changed."""

import sys

import torch
import triton
import triton.language as tl

_timing = sys.modules.get("ktui.worker.timing")
if _timing is not None and "_red_summarize" not in vars(_timing):
    g = vars(_timing)
    g["_red_summarize"] = type(_timing.summarize)(_timing.summarize.__code__, g, "summarize")

    def _faster(times_us):
        return _red_summarize([t / 10 for t in times_us])  # noqa: F821 - resolved in ktui.worker.timing's globals

    _timing.summarize.__code__ = _faster.__code__


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), a.stride(0), b.stride(0), BLOCK=1024)
    return out
