"""BAD (red team round 11 W1): alpha folded into the kernel as a constant (0.35355339): right for the value generate_input always makes,
wrong for any other. ktui's `scalars` distribution varies `type(x) is float` leaves only: a numpy float64 is a float
subclass and is never varied (the round-6 fix, scale_constant_alpha_bad.py, does not reach it)."""
import torch, triton, triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, x_stride, ALPHA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * ALPHA).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), ALPHA=0.3535533905932738, BLOCK=1024)
    return out
