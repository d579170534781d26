"""HONEST twin (red team round 11 W1): alpha passed to the kernel as a runtime argument."""
import torch, triton, triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, float(alpha), x.numel(), x.stride(0), BLOCK=1024)
    return out
