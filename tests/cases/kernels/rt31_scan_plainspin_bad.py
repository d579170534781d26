"""Wrong (red team round 31, #1): a one-pass prefix sum with a dynamic block index (an atomic ticket) and a chained
look-back that waits for its predecessor's flag with a plain load and reads its prefix with a plain load; the flag
and the prefix are published with plain stores. Nothing orders the reads after the stores: on a GPU the plain load
may be hoisted out of the loop (a hang) or served stale. The ticket, an atomic, used to exempt the whole launch from
the read rule; now a read is ordered only by a release after the store and an acquire before the read, and a flag
read STALE_SPINS times unordered fails the run, named (``interp_races.PlainWait``)."""
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
        while tl.load(flag_ptr + bid - 1) == 0:  # wait for the predecessor to publish
            pass
        before = tl.load(prefix_ptr + bid - 1)
    tl.store(prefix_ptr + bid, before + total)
    tl.store(flag_ptr + bid, 1)
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
