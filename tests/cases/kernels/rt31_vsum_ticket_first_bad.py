"""Wrong (red team round 31, #2): CUDA's threadFenceReduction with its two steps swapped: each program takes its
ticket from an atomic counter, then stores its partial; the program drawing the last ticket sums the partials. On a
GPU the last program can read a partial whose program took its ticket but has not stored yet (``torch.empty``'s
garbage). The counter used to exempt the launch; now the last program's reads are ordered only after stores
released before an atomic it acquired after, and these partials were stored after their program's ticket."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def sum_kernel(x_ptr, partial_ptr, count_ptr, out_ptr, n, NB, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    s = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    ticket = tl.atomic_add(count_ptr, 1)
    tl.store(partial_ptr + pid, s)
    if ticket == NB - 1:  # the last program to arrive: every partial is in
        p = tl.arange(0, 1024)
        acc = tl.zeros([1024], dtype=tl.float32)
        for start in range(0, NB, 1024):
            acc += tl.load(partial_ptr + start + p, mask=start + p < NB, other=0.0)
        tl.store(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.zeros((), dtype=x.dtype, device=x.device)
    if n == 0:
        return out
    nb = triton.cdiv(n, BLOCK)
    partial = torch.empty(nb, dtype=torch.float32, device=x.device)
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    sum_kernel[(nb,)](x, partial, count, out, n, NB=nb, BLOCK=BLOCK)
    return out
