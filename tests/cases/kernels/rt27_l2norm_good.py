"""Row L2 normalisation as F.normalize: x / max(||x||, 1e-12), one program per row (the honest twin)."""

import torch
import triton
import triton.language as tl


@triton.jit
def l2norm_kernel(x_ptr, out_ptr, D, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < D
    x = tl.load(x_ptr + row * sx0 + cols * sx1, mask=m, other=0.0).to(tl.float32)
    ss = tl.sum(x * x, axis=0)
    y = x / tl.maximum(tl.sqrt(ss), 1e-12)
    tl.store(out_ptr + row * D + cols, y, mask=m)


def custom_kernel(x):
    R, D = x.shape
    out = torch.empty((R, D), dtype=x.dtype, device=x.device)
    if R == 0 or D == 0:
        return out
    l2norm_kernel[(R,)](x, out, D, x.stride(0), x.stride(1), BLOCK=triton.next_power_of_2(D))
    return out
