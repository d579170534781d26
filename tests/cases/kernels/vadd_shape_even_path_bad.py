"""Red team round 10 (W5, cases.md shape-class): a vec4 fast path taken when numel % 4 == 0 that handles one group
too few. The reference gives its shapes as a tuple field, which ktui's fuzzing did not change: no multiple of four was
ever drawn. The integers inside tuple fields are fuzzed now."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add4_kernel(a_ptr, b_ptr, out_ptr, groups, BLOCK: tl.constexpr):
    g = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = g[:, None] * 4 + tl.arange(0, 4)[None, :]
    mask = g[:, None] < groups
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    if n % 4 == 0 and n:
        groups = n // 4 - 1  # the bug: one group short
        add4_kernel[(triton.cdiv(max(groups, 1), 256),)](a, b, out, groups, BLOCK=256)
    else:
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out
