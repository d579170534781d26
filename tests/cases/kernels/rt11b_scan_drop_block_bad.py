"""BAD twin of rt11b_scan_good.py (red team round 11, F2): the loop stops one block early (``n - BLOCK``), so the
last block (or the only one) is never written; the poisoned output shows it."""
import torch, triton, triton.language as tl


@triton.jit
def scan_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, n - BLOCK, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs * stride, mask=mask, other=0.0)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + offs, s, mask=mask)
        carry += tl.sum(x, axis=0)


def custom_kernel(x: torch.Tensor):
    out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    scan_kernel[(1,)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
