"""Honest twin of rt33_l2norm_barrier_bad.py: the same one-launch L2 normalization with its grid capped at 132 CTAs
(one per SM of an H100 or H200, all resident at once), each looping over its tiles before and after the barrier."""
import torch
import triton
import triton.language as tl

BLOCK = 4096
PROGRAMS = 132


@triton.jit
def l2norm_kernel(x_ptr, out_ptr, acc_ptr, count_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    part = 0.0
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        part += tl.sum(x * x, axis=0)
    tl.atomic_add(acc_ptr, part)
    tl.atomic_add(count_ptr, 1)  # arrive (acq_rel: after this program's sum)
    while tl.atomic_add(count_ptr, 0) < nprog:  # every program of the grid is resident: the wait ends
        pass
    total = tl.atomic_add(acc_ptr, 0.0)
    for start in range(pid * BLOCK, n, nprog * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + offs, x / tl.sqrt(total), mask=offs < n)


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.empty_like(x)
    if n == 0:
        return out
    acc = torch.zeros(1, dtype=torch.float32, device=x.device)
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    l2norm_kernel[(min(triton.cdiv(n, BLOCK), PROGRAMS),)](x, out, acc, count, n, BLOCK=BLOCK)
    return out
