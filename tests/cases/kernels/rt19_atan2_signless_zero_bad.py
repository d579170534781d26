"""WRONG (red team round 19, W3): atan2 by octant reduction, atan of min/max reflected into the right quadrant.

The quadrant tests read the signs with `x < 0` and `y < 0`, so -0.0 is taken for +0.0: atan2(-0.0, -1) comes out
+pi (torch: -pi) and atan2(+0.0, -0.0) comes out 0 (torch: +pi). ktui never draws a negative zero.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

PI = tl.constexpr(3.141592653589793)


@triton.jit
def atan2_kernel(y_ptr, x_ptr, out_ptr, n, sy, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs * sy, mask=m, other=1.0)
    x = tl.load(x_ptr + offs * sx, mask=m, other=1.0)
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    t = lo / hi
    t = tl.where(hi == 0.0, 0.0, t)  # atan2(0, 0)
    t = tl.where((ax == float("inf")) & (ay == float("inf")), 1.0, t)  # atan2(inf, inf)
    a = libdevice.atan(t)
    a = tl.where(ay > ax, PI / 2 - a, a)
    a = tl.where(x < 0, PI - a, a)
    a = tl.where(y < 0, -a, a)
    tl.store(out_ptr + offs, a, mask=m)


def custom_kernel(data):
    y, x = data
    out = torch.empty(y.shape, dtype=torch.float32, device=y.device)
    n = y.numel()
    atan2_kernel[(triton.cdiv(n, 1024),)](y, x, out, n, y.stride(0) if n else 1, x.stride(0) if n else 1, BLOCK=1024)
    return out
