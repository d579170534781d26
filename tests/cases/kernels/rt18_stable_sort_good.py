"""HONEST twin of rt18_stable_sort_bad.py: equal scores before j rank below it, as a stable sort keeps them."""

import torch
import triton
import triton.language as tl


@triton.jit
def rank_sort_kernel(x_ptr, v_ptr, i_ptr, n, sx0, sx1, CH: tl.constexpr, BI: tl.constexpr):
    row = tl.program_id(0)
    jb = tl.program_id(1)
    j = jb * CH + tl.arange(0, CH)
    jm = j < n
    xj = tl.load(x_ptr + row * sx0 + j * sx1, mask=jm, other=0.0)
    xjf = xj.to(tl.float32)
    rank = tl.zeros([CH], dtype=tl.int32)
    for start in range(0, n, BI):
        i = start + tl.arange(0, BI)
        im = i < n
        xi = tl.load(x_ptr + row * sx0 + i * sx1, mask=im, other=0.0).to(tl.float32)
        below = (xi[None, :] < xjf[:, None]) | ((xi[None, :] == xjf[:, None]) & (i[None, :] < j[:, None]))
        rank += tl.sum((below & im[None, :]).to(tl.int32), axis=1)
    tl.store(v_ptr + row * n + rank, xj, mask=jm)
    tl.store(i_ptr + row * n + rank, j.to(tl.int64), mask=jm)


def custom_kernel(x):
    rows, cols = x.shape
    v = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    i = torch.empty((rows, cols), dtype=torch.int64, device=x.device)
    ch = 128
    rank_sort_kernel[(rows, triton.cdiv(cols, ch))](x, v, i, cols, x.stride(0), x.stride(1), CH=ch, BI=128)
    return v, i
