"""Red team round 10 (W1): the integer exponent p (a Python int argument, not a spec field) folded into the kernel
as a cube: right for the one p generate_input makes (3), wrong for x ** 2, x ** 4 or x ** 6. The scalars cases now
move int arguments the reference takes other values of."""
import torch
import triton
import triton.language as tl


@triton.jit
def cube_kernel(x_ptr, out_ptr, n, xs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * xs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (x * x * x).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, p = data  # p ignored: "always 3 in this model"
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    cube_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
