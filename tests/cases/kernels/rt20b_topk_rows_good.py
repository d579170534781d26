"""HONEST (red team round 20b, F3): top-k pooling with the picks sorted by score (torch.topk's default), each picked
row scaled by its gate in Triton. The reference's topk(sorted=False) leaves the order open: (id, row) pairs match."""

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
    pick_rows[(k,)](x, ids, w.contiguous(), out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return ids, out
