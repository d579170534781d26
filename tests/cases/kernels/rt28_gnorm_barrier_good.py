"""Honest (red team round 28, #8): one persistent launch with a grid-wide barrier. The grid is at most the H100's
132 SMs' worth of programs, all co-resident on a GPU; each adds its partial sum of squares atomically, arrives at a
counter and spins (an acquire atomic) until every program arrived, then scales its blocks. Under the Triton
interpreter, which runs programs one at a time, program 0 waits for ever: the version needs a GPU, not a timeout
that blames it."""
import torch
import triton
import triton.language as tl

BLOCK = 256
SMS = 132


@triton.jit
def gnorm_kernel(x_ptr, out_ptr, acc_ptr, cnt_ptr, n, nblocks, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    part = tl.zeros([BLOCK], dtype=tl.float32)
    for b in range(pid, nblocks, nprog):
        offs = b * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        part += x * x
    tl.atomic_add(acc_ptr, tl.sum(part, axis=0), sem="release")
    tl.atomic_add(cnt_ptr, 1, sem="release")
    while tl.atomic_add(cnt_ptr, 0, sem="acquire") < nprog:
        pass
    total = tl.atomic_add(acc_ptr, 0.0, sem="acquire")
    scale = 1.0 / tl.sqrt(total + 1e-12)
    for b in range(pid, nblocks, nprog):
        offs = b * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + offs, x * scale, mask=offs < n)


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.empty_like(x)
    if n == 0:
        return out
    nblocks = triton.cdiv(n, BLOCK)
    grid = min(SMS, nblocks)
    acc = torch.zeros((), dtype=torch.float32, device=x.device)
    cnt = torch.zeros((), dtype=torch.int32, device=x.device)
    gnorm_kernel[(grid,)](x, out, acc, cnt, n, nblocks, BLOCK=BLOCK)
    return out
