"""Red team round 10 (F1), honest: top-8 per row by eight rounds of argmax (the first index among equal values), each
pick masked out. torch.topk orders ties its own way, so the indices differ from the reference's exactly where the row
holds equal values; judged by what they select, they are right."""
import torch
import triton
import triton.language as tl


@triton.jit
def topk_kernel(x_ptr, v_ptr, i_ptr, cols, xs0, xs1, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * xs0 + offs * xs1, mask=m, other=float("-inf")).to(tl.float32)
    x = tl.where(m, x, float("-inf"))
    taken = offs < 0
    for j in tl.static_range(K):
        cand = tl.where(taken | ~m, float("-inf"), x)
        best = tl.max(cand, axis=0)
        # the first index holding the best value among those not taken (a -inf row: the first untaken column)
        idx = tl.min(tl.where((cand == best) & ~taken & m, offs, BLOCK), axis=0)
        tl.store(v_ptr + row * K + j, best.to(v_ptr.dtype.element_ty))
        tl.store(i_ptr + row * K + j, idx.to(tl.int64))
        taken = taken | (offs == idx)


def custom_kernel(x):
    rows, cols = x.shape
    v = torch.empty((rows, 8), dtype=x.dtype, device=x.device)
    i = torch.empty((rows, 8), dtype=torch.int64, device=x.device)
    topk_kernel[(rows,)](x, v, i, cols, x.stride(0), x.stride(1), K=8, BLOCK=triton.next_power_of_2(cols))
    return v, i
