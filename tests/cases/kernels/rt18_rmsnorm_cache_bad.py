"""BAD (red team round 18 W3): RMSNorm whose weight preparation (an fp32 copy padded to the block) is cached per
weight tensor and its ``_version``. A weight written in place by a kernel or through ``.data`` (an optimizer step
in a fused kernel) keeps its version, and the stale copy is served. ktui's fresh inputs for timed and verified calls
go in the same way (``tensors.copy_into``), so the verified stretch meets it. Honest twin: rt18_rmsnorm_good.py."""

import torch
import triton
import triton.language as tl

_prepared: dict[int, tuple[torch.Tensor, int, torch.Tensor]] = {}


@triton.jit
def prep_weight(w_ptr, out_ptr, n, sw, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(w_ptr + offs * sw, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, w.to(tl.float32))


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n, eps, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=offs < n, other=0.0).to(tl.float32)
        acc += x * x
    r = tl.rsqrt(tl.sum(acc, axis=0) / n + eps)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs)
        tl.store(out_ptr + row * n + offs, (x * r * w).to(out_ptr.dtype.element_ty), mask=mask)


def _weight(w: torch.Tensor, block: int) -> torch.Tensor:
    hit = _prepared.get(id(w))
    fits = hit is not None and hit[2].numel() >= triton.cdiv(w.numel(), block) * block
    if hit is not None and hit[0] is w and hit[1] == w._version and fits:
        return hit[2]
    n = w.numel()
    out = torch.empty(triton.cdiv(n, block) * block, dtype=torch.float32, device=w.device)
    prep_weight[(triton.cdiv(n, block),)](w, out, n, w.stride(0), BLOCK=block)
    if len(_prepared) > 64:
        _prepared.pop(next(iter(_prepared)))
    _prepared[id(w)] = (w, w._version, out)
    return out


def custom_kernel(data):
    x, w, eps = data
    rows, cols = x.shape
    block = min(1024, triton.next_power_of_2(cols))
    wp = _weight(w, block)
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(rows,)](x, wp, out, cols, eps, x.stride(0), x.stride(1), BLOCK=block)
    return out
