"""Wrong (red team round 33, #2): the ticketed look-back scan of rt31_scan_ticket_good.py spinning on its
predecessor's flag with a volatile load, then reading the predecessor's prefix with a plain load. PTX treats
ld.volatile as relaxed: the spin orders nothing, so the prefix load may run before the prefix is stored (ktui's own
PlainWait advice said so, yet a volatile load was credited as an acquire). The honest twin polls with an acquire
atomic: rt31_scan_ticket_good.py."""
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
