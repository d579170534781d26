"""Honest (red team round 33b, #4): an L2 normalization meeting at a grid-wide barrier only for small inputs, at most
one CTA per SM (FUSED=True, all resident at once); large inputs take the same kernel without the barrier
(FUSED=False) and a second kernel scales. The dumps rung held its FUSED=False benchmark launch to the CTAs that fit:
a waited launch is matched by its kernel and constexprs now."""
import torch
import triton
import triton.language as tl

BLOCK = 4096
SMS = 132


@triton.jit
def l2norm_kernel(x_ptr, out_ptr, acc_ptr, count_ptr, n, BLOCK: tl.constexpr, FUSED: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(acc_ptr, tl.sum(x * x, axis=0))
    if FUSED:
        tl.atomic_add(count_ptr, 1)  # arrive (acq_rel: after this program's sum)
        while tl.atomic_add(count_ptr, 0) < tl.num_programs(0):  # every CTA is resident (grid <= SMs)
            pass
        total = tl.atomic_add(acc_ptr, 0.0)
        tl.store(out_ptr + offs, x / tl.sqrt(total), mask=offs < n)


@triton.jit
def scale_kernel(x_ptr, out_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x / tl.sqrt(tl.load(acc_ptr)), mask=offs < n)


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.empty_like(x)
    if n == 0:
        return out
    acc = torch.zeros(1, dtype=torch.float32, device=x.device)
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    grid = triton.cdiv(n, BLOCK)
    if grid <= SMS:
        l2norm_kernel[(grid,)](x, out, acc, count, n, BLOCK=BLOCK, FUSED=True)
    else:
        l2norm_kernel[(grid,)](x, out, acc, count, n, BLOCK=BLOCK, FUSED=False)
        scale_kernel[(grid,)](x, out, acc, n, BLOCK=BLOCK)
    return out
