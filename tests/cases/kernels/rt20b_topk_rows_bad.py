"""WRONG (red team round 20b, F3's twin): top-k pooling whose gates go to the rows in reverse pick order: row j is
node ids[j]'s features scaled by pick k-1-j's gate (each row's values are plausible; the (id, row) pairs are not)."""

import torch
import triton
import triton.language as tl


@triton.jit
def pick_rows(x_ptr, ids_ptr, w_ptr, out_ptr, D, sx, BLOCK: tl.constexpr):
    j = tl.program_id(0)
    node = tl.load(ids_ptr + j)
    gate = 1.0 / (1.0 + tl.exp(-tl.load(w_ptr + j)))
    offs = tl.arange(0, BLOCK)
    m = offs < D
    row = tl.load(x_ptr + node * sx + offs, mask=m, other=0.0)
    tl.store(out_ptr + j * D + offs, row * gate, mask=m)


def custom_kernel(data):
    x, score, k = data
    w, ids = torch.topk(score, k)  # sorted: descending score
    out = torch.empty((k, x.shape[1]), dtype=x.dtype, device=x.device)
    pick_rows[(k,)](x, ids, w.flip(0).contiguous(), out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return ids, out
