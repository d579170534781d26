"""Wrong: rt32_colmean_bf16_good.py with its atomics relaxed ("the counter only counts"): the program drawing the
last ticket may read the bf16 accumulator before other programs' adds land, as nothing orders them (no release after
an add, no acquire before the read). bf16 atomics took a path of their own in the interpreter (they have none in
Triton 3.9) outside the scheduler and the race record: the read was never judged (found while profiling)."""
import torch
import triton
import triton.language as tl


@triton.jit
def colmean_kernel(x_ptr, acc_ptr, count_ptr, out_ptr, n, NB, ROWS: tl.constexpr, SEM: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, 64)
    m = rows[:, None] < n
    x = tl.load(x_ptr + rows[:, None] * 64 + cols[None, :], mask=m, other=0.0).to(tl.float32)
    tl.atomic_add(acc_ptr + cols, tl.sum(x, axis=0).to(tl.bfloat16), sem=SEM)
    ticket = tl.atomic_add(count_ptr, 1, sem=SEM)
    if ticket == NB - 1:  # the last program: every partial is in (when the ticket ordered them)
        total = tl.load(acc_ptr + cols).to(tl.float32)
        tl.store(out_ptr + cols, (total / n).to(tl.bfloat16))


SEM = "relaxed"  # "the counter is just a count": nothing orders the adds before the last read


def custom_kernel(x):
    x = x.contiguous()
    n = x.shape[0]
    out = torch.zeros(64, dtype=torch.bfloat16, device=x.device)
    if n == 0:
        return out
    nb = triton.cdiv(n, 1024)
    acc = torch.zeros(64, dtype=torch.bfloat16, device=x.device)
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    colmean_kernel[(nb,)](x, acc, count, out, n, nb, ROWS=1024, SEM=SEM)
    return out
