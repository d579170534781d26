"""HONEST twin of rt25_nantonum_overflow_bad: exp(x) with overflow saturated at float32's largest finite value, as nan_to_num(exp(x)) gives for float32."""
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * sx, mask=m, other=0.0)
    y = tl.exp(x)
    y = tl.where(y == float("inf"), 3.4028234663852886e38, y)
    y = tl.where(y != y, 0.0, y)
    tl.store(out_ptr + offs, y, mask=m)


def custom_kernel(data):
    (x,) = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    k[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    return out
