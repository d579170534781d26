"""HONEST twin of rt18_wide_softmax_bad.py: both halves' sums rescaled to the row's max when merged."""

import torch
import triton
import triton.language as tl

CHUNK = 1024
SPLIT_ABOVE = 65536


@triton.jit
def _row_stats(x_ptr, row, lo, hi, sx0, sx1, CHUNK: tl.constexpr):
    m = tl.full([CHUNK], -float("inf"), tl.float32)
    s = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(lo, hi, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=offs < hi, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, x)
        keep = tl.exp(tl.where(new_m == -float("inf"), 0.0, m - new_m))
        s = s * keep + tl.where(x == -float("inf"), 0.0, tl.exp(x - new_m))
        m = new_m
    mm = tl.max(m, axis=0)
    ss = tl.sum(s * tl.exp(tl.where(m == -float("inf"), -float("inf"), m - mm)), axis=0)
    return mm, ss


@triton.jit
def _write(x_ptr, out_ptr, row, n, mm, ss, sx0, sx1, so0, so1, CHUNK: tl.constexpr):
    for start in range(0, n, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        mask = offs < n
        x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - mm) / ss
        tl.store(out_ptr + row * so0 + offs * so1, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_rows(x_ptr, out_ptr, n, sx0, sx1, so0, so1, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    mm, ss = _row_stats(x_ptr, row, 0, n, sx0, sx1, CHUNK)
    _write(x_ptr, out_ptr, row, n, mm, ss, sx0, sx1, so0, so1, CHUNK)


@triton.jit
def half_stats(x_ptr, m_ptr, s_ptr, n, half, sx0, sx1, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    h = tl.program_id(1)
    lo = h * half
    hi = tl.minimum(lo + half, n)
    mm, ss = _row_stats(x_ptr, row, lo, hi, sx0, sx1, CHUNK)
    tl.store(m_ptr + row * 2 + h, mm)
    tl.store(s_ptr + row * 2 + h, ss)


@triton.jit
def merge_write(x_ptr, out_ptr, m_ptr, s_ptr, n, sx0, sx1, so0, so1, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    m0 = tl.load(m_ptr + row * 2)
    m1 = tl.load(m_ptr + row * 2 + 1)
    s0 = tl.load(s_ptr + row * 2)
    s1 = tl.load(s_ptr + row * 2 + 1)
    mm = tl.maximum(m0, m1)
    ss = s0 * tl.exp(m0 - mm) + s1 * tl.exp(m1 - mm)
    _write(x_ptr, out_ptr, row, n, mm, ss, sx0, sx1, so0, so1, CHUNK)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    if cols <= SPLIT_ABOVE:
        softmax_rows[(rows,)](x, out, cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1), CHUNK=CHUNK)
        return out
    m = torch.empty((rows, 2), dtype=torch.float32, device=x.device)
    s = torch.empty((rows, 2), dtype=torch.float32, device=x.device)
    half = triton.cdiv(triton.cdiv(cols, 2), CHUNK) * CHUNK
    half_stats[(rows, 2)](x, m, s, cols, half, x.stride(0), x.stride(1), CHUNK=CHUNK)
    merge_write[(rows,)](x, out, m, s, cols, x.stride(0), x.stride(1), out.stride(0), out.stride(1), CHUNK=CHUNK)
    return out
