"""Red team round 14 F1: an honest per-row e4m3 quantizer (amax, scale = amax / 448, clamp, .to(tl.float8e4nv)).
The interpreter lost the rounding carry (7.87 -> 4), did not saturate and truncated subnormals; the GPU's
cvt.rn.satfinite.e4m3x2.f32 rounds to nearest even and saturates, which ktui's interp_fp8 now computes."""

import torch
import triton
import triton.language as tl


@triton.jit
def quant_kernel(x_ptr, q_ptr, s_ptr, n, sxm, sxn, sqm, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    amax = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sxm + offs * sxn, mask=offs < n, other=0.0)
        amax = tl.maximum(amax, tl.abs(x))
    a = tl.maximum(tl.max(amax, axis=0), 1e-12)
    scale = a / 448.0
    tl.store(s_ptr + row, scale)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sxm + offs * sxn, mask=offs < n, other=0.0)
        y = tl.minimum(tl.maximum(x / scale, -448.0), 448.0)
        tl.store(q_ptr + row * sqm + offs, y.to(tl.float8e4nv), mask=offs < n)


def custom_kernel(data):
    (x,) = data
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.float8_e4m3fn, device=x.device)
    s = torch.empty((m,), dtype=torch.float32, device=x.device)
    quant_kernel[(m,)](x, q, s, n, x.stride(0), x.stride(1), q.stride(0), BLOCK=1024)
    return q, s
