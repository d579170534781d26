"""Wrong on a GPU (red team round 32b, #4): a one-launch L2 normalization whose programs each add their block's sum of
squares, arrive at a counter and spin until all cdiv(n, 4096) of them arrived, then scale. The grid is not capped at
the CTAs that fit at once: at the benchmark's n = 2**26 that is 16,384 CTAs, and the resident ones spin for ever
for those that cannot start. Under the interpreter every program of the grid runs, so the barrier ended and every
rung passed; the dumps rung now holds a kernel that waited for later programs to the resident CTAs. The honest twin
caps the grid and loops: rt33_l2norm_persistent_good.py."""
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def l2norm_kernel(x_ptr, out_ptr, acc_ptr, count_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.atomic_add(acc_ptr, tl.sum(x * x, axis=0))
    tl.atomic_add(count_ptr, 1)  # arrive (acq_rel: after this program's sum)
    while tl.atomic_add(count_ptr, 0) < nprog:  # wait for every program of the grid
        pass
    total = tl.atomic_add(acc_ptr, 0.0)
    tl.store(out_ptr + offs, x / tl.sqrt(total), mask=m)


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.empty_like(x)
    if n == 0:
        return out
    acc = torch.zeros(1, dtype=torch.float32, device=x.device)
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    l2norm_kernel[(triton.cdiv(n, BLOCK),)](x, out, acc, count, n, BLOCK=BLOCK)
    return out
