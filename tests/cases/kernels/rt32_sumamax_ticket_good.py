"""Honest twin of rt32_sumamax_ticket_first_bad.py: each program stores its partial, then takes its ticket (acq_rel:
the ticket releases the store, and the last ticket acquires every earlier one), then folds its block max into the
amax; the program holding the last ticket adds the partials."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def sum_amax_kernel(x_ptr, partial_ptr, count_ptr, sum_ptr, amax_ptr, n, NB, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(x, axis=0)
    m = tl.max(tl.abs(x), axis=0)
    tl.store(partial_ptr + pid, s)
    ticket = tl.atomic_add(count_ptr, 1)  # acq_rel: publishes the partial above
    tl.atomic_max(amax_ptr, m)
    if ticket == NB - 1:
        p = tl.arange(0, 1024)
        acc = tl.zeros([1024], dtype=tl.float32)
        for start in range(0, NB, 1024):
            acc += tl.load(partial_ptr + start + p, mask=start + p < NB, other=0.0)
        tl.store(sum_ptr, tl.sum(acc, axis=0))


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    total = torch.zeros((), dtype=torch.float32, device=x.device)
    amax = torch.zeros((), dtype=torch.float32, device=x.device)
    if n == 0:
        return total, amax
    nb = triton.cdiv(n, BLOCK)
    partial = torch.empty(nb, dtype=torch.float32, device=x.device)
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    sum_amax_kernel[(nb,)](x, partial, count, total, amax, n, nb, BLOCK=BLOCK)
    return total, amax
