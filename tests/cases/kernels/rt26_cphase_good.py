"""HONEST (red team round 26, #4): complex rotation z * w, w's real and imaginary parts passed as float
arguments: one program per 1024 complex elements over the interleaved (re, im) float32 view."""

import torch
import triton
import triton.language as tl


@triton.jit
def rot_kernel(z_ptr, out_ptr, n, cols, s0, s1, c, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r, cc = offs // cols, offs % cols
    src = 2 * (r * s0 + cc * s1)
    re = tl.load(z_ptr + src, mask=mask)
    im = tl.load(z_ptr + src + 1, mask=mask)
    tl.store(out_ptr + 2 * offs, re * c - im * s, mask=mask)
    tl.store(out_ptr + 2 * offs + 1, re * s + im * c, mask=mask)


def custom_kernel(data):
    z, w = data
    out = torch.empty(z.shape, dtype=z.dtype, device=z.device)
    n = z.numel()
    rot_kernel[(triton.cdiv(n, 1024),)](torch.view_as_real(z), torch.view_as_real(out), n, z.shape[1],
                                        z.stride(0), z.stride(1), float(w.real), float(w.imag), BLOCK=1024)
    return out
