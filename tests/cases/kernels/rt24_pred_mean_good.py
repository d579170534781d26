"""Honest: one program per row finds the max and its first index; one program sums the row maxima in float32 and
scales by 1 / rows; the mean goes back as a Python float."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, m_ptr, i_ptr, sr, sc, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * sr + offs * sc, mask=offs < cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    first = tl.min(tl.where(x == m, offs, BLOCK), axis=0)
    tl.store(m_ptr + row, m)
    tl.store(i_ptr + row, first.to(tl.int64))


@triton.jit
def mean_kernel(m_ptr, out_ptr, n, inv_n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r0 in range(0, n, BLOCK):
        offs = r0 + tl.arange(0, BLOCK)
        acc += tl.load(m_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) * inv_n)


def custom_kernel(x: torch.Tensor):
    rows, cols = x.shape
    m = torch.empty(rows, dtype=torch.float32, device=x.device)
    idx = torch.empty(rows, dtype=torch.int64, device=x.device)
    out = torch.empty(1, dtype=torch.float32, device=x.device)
    rowmax_kernel[(rows,)](x, m, idx, x.stride(0), x.stride(1), cols, BLOCK=triton.next_power_of_2(cols))
    mean_kernel[(1,)](m, out, rows, 1.0 / rows, BLOCK=1024)
    return idx, out.item()
