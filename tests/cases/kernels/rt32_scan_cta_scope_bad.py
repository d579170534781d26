"""Wrong (red team round 32, #3): the honest ticketed look-back scan (rt31_scan_ticket_good.py) with its flag released
and acquired at ``scope="cta"``: a cta-scope release orders only within the block, and the programs of a launch are
blocks, so on a GPU the next block can see the flag and still read a stale prefix. ktui dropped the scope (every
release counted across the launch); a cta-scope atomic now orders nothing between programs (``interp_races._sem``)."""
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
        while tl.atomic_add(flag_ptr + bid - 1, 0, sem="acquire", scope="cta") == 0:
            pass
        before = tl.load(prefix_ptr + bid - 1)
    tl.store(prefix_ptr + bid, before + total)
    tl.atomic_xchg(flag_ptr + bid, 1, sem="release", scope="cta")
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
