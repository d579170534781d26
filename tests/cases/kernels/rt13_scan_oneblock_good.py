"""HONEST (red team round 13, F4; failed on the CPU before the fix): an fp32 prefix sum scanning the whole vector as
one block (up to 16,384 elements, then a float32 carry from block to block): fp32 arithmetic throughout. The
interpreter's tl.cumsum is sequential, so each running value is rounded once per element of the block, not once per
element of a 1024-block as the native bar's float32 scan assumed (``ktui.worker.float32_scans``): 23.8x that bar.
The bar is now also the sequential float32 scan, the worst honest float32 order."""
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
    block = min(triton.next_power_of_2(max(x.numel(), 1)), 16384)
    scan_kernel[(1,)](x, out, x.numel(), x.stride(0), BLOCK=block)
    return out
