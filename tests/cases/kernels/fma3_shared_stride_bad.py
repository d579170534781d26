"""BAD (strides, mixed, three inputs): c, the addend, is read with a's stride ("laid out like a"): right whenever a and
c share a layout, which alternating contiguous and strided input by input always gave."""
import torch
import triton
import triton.language as tl


@triton.jit
def fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    c = tl.load(c_ptr + offs * a_stride, mask=mask)
    tl.store(out_ptr + offs, a * b + c, mask=mask)


def custom_kernel(data):
    a, b, c = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    fma_kernel[(triton.cdiv(n, 1024),)](a, b, c, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
