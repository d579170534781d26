"""HONEST twin of rt25_nansum_plain_sum_bad: NaN elements skipped (v == v is False only for NaN)."""
import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, cols, sr, sc, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < cols
        v = tl.load(x_ptr + row * sr + offs * sc, mask=m, other=0.0).to(tl.float32)
        acc += tl.where(v == v, v, 0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def custom_kernel(data):
    (x,) = data
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    rowsum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=1024)
    return out
