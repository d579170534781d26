"""BAD (scalars): alpha folded into the kernel as a compile-time constant, the value generate_input always makes:
right on every tensor ktui draws, wrong for any other alpha."""
import torch, triton, triton.language as tl

ALPHA = 2.5  # the problem's scale


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, x_stride, ALPHA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * ALPHA).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), ALPHA=ALPHA, BLOCK=1024)
    return out
