"""Honest (red team round 28, #1): one program per source row, tl.atomic_add of the row into out[idx[i]] (bf16 atomics: sm_90 has
atom.add.noftz.bf16; Triton compiles them)."""
import torch
import triton
import triton.language as tl


@triton.jit
def scatter_add_kernel(idx_ptr, src_ptr, out_ptr, D, s_idx, s0, s1, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    row = tl.load(idx_ptr + i * s_idx)
    for c0 in range(0, D, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < D
        v = tl.load(src_ptr + i * s0 + cols * s1, mask=m, other=0.0)
        tl.atomic_add(out_ptr + row * D + cols, v, mask=m, sem="relaxed")


def custom_kernel(data):
    idx, src, v = data
    n, d = src.shape
    out = torch.zeros(v, d, dtype=src.dtype, device=src.device)
    if n == 0 or d == 0:
        return out
    BLOCK = min(1024, triton.next_power_of_2(d))
    scatter_add_kernel[(n,)](idx, src, out, d, idx.stride(0), src.stride(0), src.stride(1), BLOCK=BLOCK)
    return out
