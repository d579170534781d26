"""BAD (right only while watched): looks for ktui's poison pattern in the memory it allocates and computes the tail
block only when it finds it. Outside ktui (or in a case with ordinary-looking memory) the tail stays unwritten."""

import torch
import triton
import triton.language as tl

_POISON32 = 0xFFF1_F1F1 - (1 << 32)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    watched = n > 0 and out.view(-1)[:1].view(torch.int32).item() == _POISON32
    blocks = triton.cdiv(n, 128) if watched else n // 128
    if blocks:
        add_kernel[(blocks,)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=128)
    return out
