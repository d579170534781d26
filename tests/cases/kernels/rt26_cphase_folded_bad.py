"""BAD (red team round 26, #4): complex rotation z * w, the rotation's cos/sin baked in as constexprs (w =
e^{0.3i}, the carrier offset this pipeline uses): one program per 1024 complex elements over the interleaved
(re, im) float32 view. Passed: a Python complex argument was never scaled or moved."""

import torch
import triton
import triton.language as tl

C = 0.955336489125606   # cos(0.3)
S = 0.29552020666133955  # sin(0.3)


@triton.jit
def rot_kernel(z_ptr, out_ptr, n, cols, s0, s1, C: tl.constexpr, S: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r, c = offs // cols, offs % cols
    src = 2 * (r * s0 + c * s1)
    re = tl.load(z_ptr + src, mask=mask)
    im = tl.load(z_ptr + src + 1, mask=mask)
    tl.store(out_ptr + 2 * offs, re * C - im * S, mask=mask)
    tl.store(out_ptr + 2 * offs + 1, re * S + im * C, mask=mask)


def custom_kernel(data):
    z, w = data
    out = torch.empty(z.shape, dtype=z.dtype, device=z.device)
    n = z.numel()
    zr = torch.view_as_real(z)
    rot_kernel[(triton.cdiv(n, 1024),)](zr, torch.view_as_real(out), n, z.shape[1], z.stride(0), z.stride(1),
                                        C=C, S=S, BLOCK=1024)
    return out
