"""HONEST (red team round 11, F1; failed on the CPU before the fix): a two-pass sum whose partial-sums workspace is
cached per device (allocated at the first call's size) and grown in place with ``resize_`` when a larger input comes.
Guarded allocations are DLPack aliases that torch will not resize; ``ktui.worker.allocation`` now grows them as torch
grows a plain storage."""
import torch, triton, triton.language as tl

BLOCK = 1024
_WS: dict = {}


def _workspace(n: int, device) -> torch.Tensor:
    buf = _WS.get(str(device))
    if buf is None:
        buf = _WS[str(device)] = torch.empty(n, dtype=torch.float32, device=device)
    if buf.numel() < n:
        buf.resize_(n)
    return buf


@triton.jit
def partial_kernel(x_ptr, part_ptr, n, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride, mask=offs < n, other=0.0)
    tl.store(part_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def final_kernel(part_ptr, out_ptr, m, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, m, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < m, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(x: torch.Tensor):
    n = x.numel()
    m = triton.cdiv(n, BLOCK)
    part = _workspace(m, x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    partial_kernel[(m,)](x, part, n, x.stride(0), BLOCK=BLOCK)
    final_kernel[(1,)](part, out, m, BLOCK=BLOCK)
    return out
