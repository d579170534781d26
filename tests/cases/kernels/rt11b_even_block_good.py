"""HONEST twin of rt11b_even_block_bad.py: the same EVEN fast path, b loaded from b."""
import torch, triton, triton.language as tl


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        a = tl.load(a_ptr + offs * sa)
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
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
