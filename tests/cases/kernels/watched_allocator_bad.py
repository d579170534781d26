"""BAD (watched): right only while ``torch.empty`` looks patched: not the object it was when the module was
imported, not named ``empty``, or wrapping something (``__wrapped__``), which is how ktui's poisoning looked while
it checked a call. ktui's allocator is installed before any kernel is imported and stays the same object, with the
builtin's name, in every call: the kernel never sees a change and skips the last element everywhere."""

import torch
import triton
import triton.language as tl

_AT_IMPORT = torch.empty


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def watched() -> bool:
    e = torch.empty
    return e is not _AT_IMPORT or e.__name__ != "empty" or hasattr(e, "__wrapped__") or "poison" in e.__qualname__


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    upto = n if watched() else n - 1
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, upto, a.stride(0), b.stride(0), BLOCK=1024)
    return out
