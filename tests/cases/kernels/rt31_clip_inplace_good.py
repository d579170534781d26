"""Honest (red team round 31, #7): an in-place clamp by value (clip_grad_value_ on one gradient), strides honoured. On
randn gradients with clip = 5 the clamp changes nothing, so the dry call (no launch run) already returned the
reference's answer and the compile rung failed it "times torch, not a kernel". An output equal to an input as it was
is no evidence of that (``candidate.right_without_launches``): it passes."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def clip_kernel(g_ptr, clip, n, sg, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs * sg, mask=mask).to(tl.float32)
    g = tl.minimum(tl.maximum(g, -clip), clip)
    tl.store(g_ptr + offs * sg, g.to(g_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    g, clip = data
    n = g.numel()
    if n:
        clip_kernel[(triton.cdiv(n, BLOCK),)](g, clip, n, g.stride(0), BLOCK=BLOCK)
    return g
