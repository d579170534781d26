"""Vector add with a PTX add on CUDA (tl.inline_asm_elementwise), plain `+` elsewhere: honest; under the
interpreter the stand-in driver makes `is_cuda()` true, so the PTX branch is the one to check, and only a GPU can."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    if tl.target_info.is_cuda():
        c = tl.inline_asm_elementwise("add.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.float32, is_pure=True, pack=1)
    else:
        c = a + b
    tl.store(out_ptr + offs, c, mask=mask)


def custom_kernel(data):
    a, b = data
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out
