"""BAD (robust-0d): the 0-d bf16 sum of its honest twin, but the mask drops the last element (``offs < n - 1``):
wrong for every size, by one element."""

import torch
import triton
import triton.language as tl


@triton.jit
def chunk_sum(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # past 2^31 elements too
    x = tl.load(x_ptr + offs, mask=offs < n - 1, other=0.0).to(tl.float32)
    tl.atomic_add(acc_ptr, tl.sum(x, axis=0))


def custom_kernel(x):
    n = x.numel()
    acc = torch.zeros((), dtype=torch.float32, device=x.device)
    chunk_sum[(triton.cdiv(n, 1024),)](x, acc, n, BLOCK=1024)
    return acc.to(torch.bfloat16)
