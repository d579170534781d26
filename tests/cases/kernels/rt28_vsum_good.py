"""Honest (red team round 28, #11): the textbook Triton 1-D fp32 sum into a 0-d output: up to 2**21 elements one
program per 4,096-element block, ``tl.sum``, then ``tl.atomic_add``; beyond, partial sums and one program summing all
cdiv(n, BLOCK) of them. On the shifted rows (halves at +-150 cancelling) its block order's error passed 8x torch's
own float32 error in one case of four and failed."""
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def block_sum_atomic(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * sx, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@triton.jit
def block_sum_partial(x_ptr, part_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * sx, mask=offs < n, other=0.0)
    tl.store(part_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def final_sum(part_ptr, out_ptr, m, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(0, m, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < m, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(x):
    n = x.numel()
    out = torch.zeros((), dtype=torch.float32, device=x.device)
    if n == 0:
        return out
    nb = triton.cdiv(n, BLOCK)
    if n <= (1 << 21):
        block_sum_atomic[(nb,)](x, out, n, x.stride(0), BLOCK=BLOCK)
    else:
        part = torch.empty(nb, dtype=torch.float32, device=x.device)
        block_sum_partial[(nb,)](x, part, n, x.stride(0), BLOCK=BLOCK)
        final_sum[(1,)](part, out, nb, BLOCK=1024)
    return out
