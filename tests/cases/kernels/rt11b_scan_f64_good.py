"""Twin of good_scan.py that passes: the same scan with its values and carry in float64 (as torch's CPU cumsum
accumulates), rounded to fp32 at the store. fp64 arithmetic runs at 1/2 the fp32 rate on an H200 and 1/64 on
consumer GPUs: ktui's CPU verdict pushes an honest fp32 scan there."""
import torch, triton, triton.language as tl


@triton.jit
def scan_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    carry = tl.zeros((), dtype=tl.float64)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs * stride, mask=mask, other=0.0).to(tl.float64)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + offs, s.to(tl.float32), mask=mask)
        carry += tl.sum(x, axis=0)


def custom_kernel(x: torch.Tensor):
    out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    scan_kernel[(1,)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
