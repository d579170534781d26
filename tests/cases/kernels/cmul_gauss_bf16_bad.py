"""BAD (complex outputs, imprecise): cmul_gauss_good.py with its middle product computed from operands rounded to
bf16: an error of up to ~2% of |z| in the imaginary parts, far beyond complex64's default rtol = 1e-5 of |z|; within
a tolerance of 5e-2 that a reference declares under "complex64" (cmul_wide_loose.py)."""
import torch
import triton
import triton.language as tl


@triton.jit
def cmul_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    ar = tl.load(a_ptr + offs * sa, mask=m)
    ai = tl.load(a_ptr + offs * sa + 1, mask=m)
    br = tl.load(b_ptr + offs * sb, mask=m)
    bi = tl.load(b_ptr + offs * sb + 1, mask=m)
    k1 = br * (ar + ai)
    k2 = (ar.to(tl.bfloat16) * (bi - br).to(tl.bfloat16)).to(tl.float32)  # the bug: a product in bf16
    k3 = ai * (br + bi)
    tl.store(out_ptr + 2 * offs, k1 - k3, mask=m)
    tl.store(out_ptr + 2 * offs + 1, k1 + k2, mask=m)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(n, dtype=torch.complex64, device=a.device)
    ar, br, o = torch.view_as_real(a), torch.view_as_real(b), torch.view_as_real(out)
    cmul_kernel[(triton.cdiv(n, 256),)](ar, br, o, n, ar.stride(0), br.stride(0), BLOCK=256)
    return out
