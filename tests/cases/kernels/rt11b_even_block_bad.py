"""BAD (red team round 11, W5): the usual EVEN fast path (n a multiple of BLOCK: no masks), with a copy-paste slip
in it (b loaded from a's pointer). Wrong on every input whose size is a multiple of 1024. The reference's tests hold
a block size minus and plus one (1023, 1025) but no multiple of it, and the fuzzed sizes reached a multiple of 1024
only by chance (``pow2`` rounds to a multiple of at most 128): it passed 7 runs of 10. Every run now draws a multiple
of 4096 (the ``aligned`` draw, ``ktui.worker.fuzz``)."""
import torch, triton, triton.language as tl


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        a = tl.load(a_ptr + offs * sa)
        b = tl.load(a_ptr + offs * sb)
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
