"""BAD (red team round 11 W2): rows on the grid's second axis, grid = (cdiv(cols, BLOCK), rows). CUDA limits gridDim.y to 65,535, so at the
benchmark's 131,072 rows the launch fails on every NVIDIA GPU (cuLaunchKernel: invalid argument). The Triton
interpreter has no grid limits, and ktui checked none: the dumps rung now fails it."""
import torch, triton, triton.language as tl


@triton.jit
def bias_kernel(x_ptr, b_ptr, out_ptr, cols, sxr, sxc, sb, BLOCK: tl.constexpr):
    row = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask)
    b = tl.load(b_ptr + offs * sb, mask=mask)
    tl.store(out_ptr + row * cols + offs, x + b, mask=mask)


def custom_kernel(data):
    x, b = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    BLOCK = 1024
    bias_kernel[(triton.cdiv(cols, BLOCK), rows)](x, b, out, cols, x.stride(0), x.stride(1), b.stride(0), BLOCK=BLOCK)
    return out
