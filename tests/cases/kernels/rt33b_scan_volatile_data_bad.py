"""Wrong (red team round 33b, #1): rt33_scan_volatile_spin_bad.py reading the predecessor's prefix with a volatile
load too (the usual CUDA look-back idiom): the volatile spin orders nothing, and a volatile load was never checked by
the read rule, so it passed. Volatile loads are read as other loads once per element now."""
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def scan_kernel(x_ptr, out_ptr, prefix_ptr, flag_ptr, ticket_ptr, n, BLOCK: tl.constexpr):
    bid = tl.atomic_add(ticket_ptr, 1)  # dynamic block id: blocks are numbered in the order they start
    offs = bid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    local = tl.cumsum(x, axis=0)
    total = tl.sum(x, axis=0)
    before = 0.0
    if bid > 0:
        while tl.load(flag_ptr + bid - 1, volatile=True) == 0:  # "volatile: always the latest value"
            pass
        before = tl.load(prefix_ptr + bid - 1, volatile=True)  # "volatile: the latest prefix"
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
