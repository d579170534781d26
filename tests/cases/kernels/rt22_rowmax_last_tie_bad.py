"""WRONG (red team round 22, F1): row max and its index, one program per row; ties go to the LAST maximal column,
where torch.max documents the first (greedy decoding over bf16 logits picks another token in 6% of rows)."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, v_ptr, i_ptr, sr, sc, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    best_v = tl.full((CHUNK,), -float("inf"), tl.float32)
    best_i = tl.full((CHUNK,), -1, tl.int32)
    for c in range(0, n_cols, CHUNK):
        cols = c + offs
        x = tl.load(x_ptr + row * sr + cols * sc, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        take = (x >= best_v) & (cols < n_cols)          # later columns win ties
        best_v = tl.where(take, x, best_v)
        best_i = tl.where(take, cols, best_i)
    m = tl.max(best_v, axis=0)
    idx = tl.max(tl.where(best_v == m, best_i, -1), axis=0)  # the last column holding the max
    tl.store(v_ptr + row, m.to(v_ptr.dtype.element_ty))
    tl.store(i_ptr + row, idx.to(tl.int64))


def custom_kernel(data):
    (x,) = data
    rows, cols = x.shape
    v = torch.empty(rows, dtype=x.dtype, device=x.device)
    i = torch.empty(rows, dtype=torch.int64, device=x.device)
    rowmax_kernel[(rows,)](x, v, i, x.stride(0), x.stride(1), cols, CHUNK=1024)
    return v, i
