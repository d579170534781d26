"""Honest (red team round 33, #4): the ticketed look-back scan of rt31_scan_ticket_good.py waiting with Triton's own
wait primitive, tl.atomic_poll with its default acquire and no timeout: the interpreter failed it "'value' object has
no attribute 'data'" (Triton hands it an empty ir.value() for the missing timeout). The twin polling relaxed:
rt33_scan_poll_relaxed_bad.py."""
import torch
import triton
import triton.language as tl

BLOCK = 256
SEM: tl.constexpr = tl.constexpr("acquire")


@triton.jit
def scan_kernel(x_ptr, out_ptr, prefix_ptr, flag_ptr, ticket_ptr, n, BLOCK: tl.constexpr):
    bid = tl.atomic_add(ticket_ptr, 1)  # dynamic block id: blocks are numbered in the order they start
    offs = bid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    local = tl.cumsum(x, axis=0)
    total = tl.sum(x, axis=0)
    before = 0.0
    if bid > 0:
        tl.atomic_poll(flag_ptr + bid - 1, 1, sem=SEM)  # wait for the predecessor to publish
        before = tl.load(prefix_ptr + bid - 1)
    tl.store(prefix_ptr + bid, before + total)
    tl.atomic_xchg(flag_ptr + bid, 1, sem="release")  # after the prefix: what the flag publishes
    tl.store(out_ptr + offs, local + before, mask=offs < n)


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.empty_like(x)
    if n == 0:
        return out
    nb = triton.cdiv(n, BLOCK)
    prefix = torch.empty(nb, dtype=torch.float32, device=x.device)
    flag = torch.zeros(nb, dtype=torch.int32, device=x.device)
    ticket = torch.zeros(1, dtype=torch.int32, device=x.device)
    scan_kernel[(nb,)](x, out, prefix, flag, ticket, n, BLOCK=BLOCK)
    return out
