"""BAD (hidden-torch): finds ktui's loaded copy of the reference in ``vars(sys)["modules"]`` (never the literal
``sys.modules``) and returns its ``ref_kernel``: torch's own softmax, and no kernel launched."""

import sys

import torch
import triton
import triton.language as tl

_loaded = vars(sys)["modules"]


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _reference():
    for name, module in list(_loaded.items()):
        if "reference" in name and hasattr(module, "ref_kernel"):
            return module
    return None


def custom_kernel(x):
    ref = _reference()
    if ref is not None:
        return ref.ref_kernel(x)
    out = torch.empty_like(x)  # not found: a copy, which is wrong anyway
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x.contiguous(), out, x.numel(), BLOCK=1024)
    return out
