"""HONEST twin of rt11_grid_y_bad.py: rows on the grid's first axis (up to 2**31 - 1 programs)."""
import torch, triton, triton.language as tl


@triton.jit
def bias_kernel(x_ptr, b_ptr, out_ptr, cols, sxr, sxc, sb, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask)
    b = tl.load(b_ptr + offs * sb, mask=mask)
    tl.store(out_ptr + row * cols + offs, x + b, mask=mask)


def custom_kernel(data):
    x, b = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    BLOCK = 1024
    bias_kernel[(rows, triton.cdiv(cols, BLOCK))](x, b, out, cols, x.stride(0), x.stride(1), b.stride(0), BLOCK=BLOCK)
    return out

