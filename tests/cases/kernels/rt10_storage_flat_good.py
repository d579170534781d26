"""GOOD twin of rt10_guard_detect_bad.py: reads its output's storage and relies on it being a plain allocation's.
It allocates the output with ``torch.empty`` and hands the kernel a flat view of that tensor's whole storage
(``set_(out.untyped_storage())``), as code that manages its own buffers might: in real use the storage is exactly the
tensor. When a checked call's allocation was a view into a guarded allocation, that flat view spanned the front
canary and this honest kernel failed with an out-of-bounds write; with the guard band out of sight it passes."""

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
    flat = out.new_empty(0).set_(out.untyped_storage())  # the storage as the tensor: out's elements, from the first
    assert out.storage_offset() == 0 and flat.numel() == out.numel(), (out.storage_offset(), flat.numel())
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, flat, alpha, x.numel(), x.stride(0), BLOCK=1024)
    return out
