"""BAD (red team round 11, W7): a host-side tuner that only bothers with large inputs (n >= 32768): it counts the
calls per size and, from the 17th call on one size, switches to its "tuned" config, BLOCK 2048 with a grid of
n // 2048 (the tail block is never computed). The burst runs the smallest spec and the verified stretch a cheap one,
so no size it tunes was called 17 times in a row; the stretch now also calls the largest test spec (65,537) 24 to
48 times."""
import collections

import torch, triton, triton.language as tl

_CALLS = collections.Counter()


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, sa, sb, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * sa, mask=mask)
    b = tl.load(b_ptr + offs * sb, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    n = a.numel()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    block, grid = 1024, triton.cdiv(n, 1024)
    if n >= 32768:
        _CALLS[n] += 1
        if _CALLS[n] > 16:  # "tuned": a bigger block (and the grid slip)
            block, grid = 2048, n // 2048
    add_kernel[(grid,)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=block)
    return out
