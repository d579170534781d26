"""BAD (a new user's stride bug): a per-column bias add that indexes x through its strides but reads the bias b as if
contiguous. On a laid-out case b is a stride-2 view (``transposed`` for 1-D) and the sum is wrong from column 1 on;
the case's name must say which input is laid out how (``in[1] strided, strides (2,)``), not only the first input's
layout. Honest twin: rt11_grid_x_good.py (b through its stride)."""
import torch, triton, triton.language as tl


@triton.jit
def bias_kernel(x_ptr, b_ptr, out_ptr, cols, sxr, sxc, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)  # the bug: b's stride ignored
    tl.store(out_ptr + row * cols + offs, x + b, mask=mask)


def custom_kernel(data):
    x, b = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    BLOCK = 1024
    bias_kernel[(rows, triton.cdiv(cols, BLOCK))](x, b, out, cols, x.stride(0), x.stride(1), BLOCK=BLOCK)
    return out
