"""Right values, indices found by value: each of the 8 picks is the first column holding that value, taken or not.
On a row with equal values among its top 8 (bf16 rows, constant rows) the same column comes back more than once: the
values it selects equal the reference's, so only the rule that indices stay distinct where the reference's are
catches it."""
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
        pick = tl.min(tl.where((cand == best) & ~taken & m, offs, BLOCK), axis=0)
        idx = tl.min(tl.where((x == best) & m, offs, BLOCK), axis=0)  # the bug: the first column of that value
        tl.store(v_ptr + row * K + j, best.to(v_ptr.dtype.element_ty))
        tl.store(i_ptr + row * K + j, idx.to(tl.int64))
        taken = taken | (offs == pick)


def custom_kernel(x):
    rows, cols = x.shape
    v = torch.empty((rows, 8), dtype=x.dtype, device=x.device)
    i = torch.empty((rows, 8), dtype=torch.int64, device=x.device)
    topk_kernel[(rows,)](x, v, i, cols, x.stride(0), x.stride(1), K=8, BLOCK=triton.next_power_of_2(cols))
    return v, i
