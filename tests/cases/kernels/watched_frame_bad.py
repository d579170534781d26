"""BAD (watched): right only while a frame of ktui's checking code is on its stack (the module that checks it calling
it, or a frame with the case or the guards among its locals); anywhere else it skips the last element, as it would
in real use. ktui calls every kernel from the main thread's loop of C callables (``ktui.worker.invoke``), whose only
frames are the entry point's, in checked and timed calls alike: it never sees one. (That ktui's entry point is on the
stack tells the kernel it runs in ktui, in every call alike: nothing a check can be told apart by.)"""

import inspect

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


CHECKING = {"ktui.worker.checked", "ktui.worker.candidate", "ktui.worker.server", "ktui.worker.guards"}


def watched() -> bool:
    frames = inspect.stack(context=0)
    return any(
        f.frame.f_globals.get("__name__", "") in CHECKING or {"case", "guards"} & set(f.frame.f_locals)
        for f in frames
    )


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    upto = n if watched() else n - 1
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, upto, a.stride(0), b.stride(0), BLOCK=1024)
    return out
