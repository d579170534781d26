"""BAD twin of rt11b_scan_good.py (red team round 11, F2): the running carry kept in bfloat16 (rounded to 8 bits
after every block), the rest float32. 2**16 times float32's unit roundoff on the carry: far above what a float32
scan gets, so the float32 baseline for scans still fails it."""
import torch, triton, triton.language as tl


@triton.jit
def scan_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs * stride, mask=mask, other=0.0)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + offs, s, mask=mask)
        carry = (carry + tl.sum(x, axis=0)).to(tl.bfloat16).to(tl.float32)


def custom_kernel(x: torch.Tensor):
    out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    scan_kernel[(1,)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
