"""WRONG (red team round 22, F2's twin): top-k ids per row that never consider the row's last column (an
off-by-one bound): wrong wherever that column is among the k largest."""

import torch
import triton
import triton.language as tl


@triton.jit
def topk_ids_kernel(x_ptr, out_ptr, sr, sc, n_cols, k, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols - 1  # the last column is never a candidate (an off-by-one bound)
    x = tl.load(x_ptr + row * sr + cols * sc, mask=valid, other=-float("inf")).to(tl.float32)
    taken = cols >= n_cols
    for j in range(k):
        m = tl.max(tl.where(taken, -float("inf"), x), axis=0)
        idx = tl.min(tl.where((~taken) & (x == m), cols, BLOCK), axis=0)
        tl.store(out_ptr + row * k + j, idx.to(tl.int64))
        taken = taken | (cols == idx)


def custom_kernel(data):
    x, k = data
    rows, cols = x.shape
    if not 0 <= k <= cols:
        raise ValueError("k out of range")
    out = torch.empty(rows, k, dtype=torch.int64, device=x.device)
    topk_ids_kernel[(rows,)](x, out, x.stride(0), x.stride(1), cols, k, BLOCK=triton.next_power_of_2(cols))
    return out
