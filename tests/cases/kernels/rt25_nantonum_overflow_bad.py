"""BAD (red team round 25, #3): plain exp(x), no saturation: +inf where nan_to_num(exp(x)) gives float32's largest finite value."""
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * sx, mask=m, other=0.0)
    y = tl.exp(x)
    tl.store(out_ptr + offs, y, mask=m)


def custom_kernel(data):
    (x,) = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    k[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    return out
