"""HONEST (red team round 11, F2; failed on the CPU before the fix): an fp32 prefix sum, one program, blocks of
1024 scanned with tl.cumsum and a running fp32 carry: fp32 arithmetic throughout, as torch's own CUDA cumsum. On
``shifted`` inputs (+-100..200) the running sum climbs to ~3e5 and comes back near 0, and fp32's rounding of it (ulp
0.03) is left where |ref| is small. torch's CPU cumsum accumulates float32 in float64 (its error is half an ulp of
each output): the native bar is now also what a float32 blocked scan gets (``ktui.worker.float32_scans``)."""
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
        carry += tl.sum(x, axis=0)


def custom_kernel(x: torch.Tensor):
    out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    scan_kernel[(1,)](x, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
