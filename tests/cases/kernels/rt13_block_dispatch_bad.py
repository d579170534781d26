"""BAD (red team round 13, W1): a hand-made dispatch on the size, as tuned elementwise kernels do: n a multiple of
4096 takes the 4096-wide block with no masks (right), n a multiple of 1024 the 1024-wide block with no masks, with a
copy-paste slip in it (b loaded from a's pointer), anything else the masked path. Wrong on every size that is a
multiple of 1024 but not of 4096. The fuzzed sizes were multiples of at most 128 (``pow2``) or of 4096 (the
``aligned`` draw): it passed every run. Every run now also draws an odd multiple of 256, 512, 1024 or 2048 in turn
(``ktui.worker.fuzz.ODD_BLOCKS``)."""
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
        block, even, slip = 1024, True, True
    else:
        block, even, slip = 1024, False, False
    add_kernel[(triton.cdiv(n, block),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=block, EVEN=even, SLIP=slip)
    return out
