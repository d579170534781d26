"""GOOD (twin of rt13_block_dispatch_bad, red team round 13 W1): the same dispatch on the size (4096-wide blocks with
no masks for n a multiple of 4096, 1024-wide ones for a multiple of 1024, else masked), without the slip."""
import torch, triton, triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, BLOCK: tl.constexpr, EVEN: tl.constexpr, SLIP: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        a = tl.load(a_ptr + offs * sa)
        if SLIP:
            b = tl.load(a_ptr + offs * sb)
        else:
            b = tl.load(b_ptr + offs * sb)
        tl.store(out_ptr + offs, a + b)
    else:
        mask = offs < n
        a = tl.load(a_ptr + offs * sa, mask=mask)
        b = tl.load(b_ptr + offs * sb, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    if n % 4096 == 0:
        block, even, slip = 4096, True, False
    elif n % 1024 == 0:
        block, even, slip = 1024, True, False
    else:
        block, even, slip = 1024, False, False
    add_kernel[(triton.cdiv(n, block),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=block, EVEN=even, SLIP=slip)
    return out
