"""Wrong (the twin of rt28_scan1d_lookback_good): each program publishes its own block's sum, not the inclusive
prefix, so from the third block on the prefix misses every block but the last one before it. Its look-back waits
end under the interpreter (each waits for an earlier program): checked on the CPU, it fails correctness."""
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def scan_kernel(x_ptr, out_ptr, prefix_ptr, flag_ptr, n, PUBLISH_OWN_ONLY: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    local = tl.cumsum(x, axis=0)
    total = tl.sum(x, axis=0)
    before = 0.0
    if pid > 0:
        while tl.atomic_add(flag_ptr + pid - 1, 0, sem="acquire") == 0:
            pass
        before = tl.load(prefix_ptr + pid - 1, volatile=True)
    if PUBLISH_OWN_ONLY:
        tl.store(prefix_ptr + pid, total)
    else:
        tl.store(prefix_ptr + pid, before + total)
    tl.atomic_xchg(flag_ptr + pid, 1, sem="release")
    tl.store(out_ptr + offs, local + before, mask=offs < n)


PUBLISH_OWN_ONLY = True


def custom_kernel(x):
    x = x.contiguous()
    n = x.numel()
    out = torch.empty_like(x)
    if n == 0:
        return out
    nb = triton.cdiv(n, BLOCK)
    prefix = torch.empty(nb, dtype=torch.float32, device=x.device)
    flag = torch.zeros(nb, dtype=torch.int32, device=x.device)
    scan_kernel[(nb,)](x, out, prefix, flag, n, PUBLISH_OWN_ONLY=PUBLISH_OWN_ONLY, BLOCK=BLOCK)
    return out
