"""MSE: per-program float32 partial sums, then one program sums them in float32; the mean as a Python float."""

import torch
import triton
import triton.language as tl


@triton.jit
def sq_partial(x_ptr, t_ptr, part_ptr, sxr, sxc, str_, stc, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        m = offs < cols
        x = tl.load(x_ptr + row * sxr + offs * sxc, mask=m, other=0.0).to(tl.float32)
        t = tl.load(t_ptr + row * str_ + offs * stc, mask=m, other=0.0).to(tl.float32)
        d = x - t
        acc += d * d
    tl.store(part_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def total(part_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r0 in range(0, n, BLOCK):
        offs = r0 + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * scale)


def custom_kernel(data) -> float:
    x, t = data
    rows, cols = x.shape
    part = torch.empty(rows, dtype=torch.float32, device=x.device)
    out = torch.empty(1, dtype=torch.float32, device=x.device)
    sq_partial[(rows,)](x, t, part, x.stride(0), x.stride(1), t.stride(0), t.stride(1), cols, BLOCK=1024)
    total[(1,)](part, out, rows, 1.0 / (rows * cols), BLOCK=1024)
    return out.item()
