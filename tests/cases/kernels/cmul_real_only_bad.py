"""BAD (complex, half written): complex multiply on the interleaved float32 view, only the real part stored: the
imaginary half of the output is never written (red team round 9: judged as real numbers, it would pass)."""
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
    tl.store(out_ptr + 2 * offs, ar * br - ai * bi, mask=m)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(n, dtype=torch.complex64, device=a.device)
    ar, br, o = torch.view_as_real(a), torch.view_as_real(b), torch.view_as_real(out)
    cmul_kernel[(triton.cdiv(n, 256),)](ar, br, o, n, ar.stride(0), br.stride(0), BLOCK=256)
    return out
