"""HONEST twin of nu24_segsum_offsets_stride_bad: the offsets read by their stride."""

import torch
import triton
import triton.language as tl


@triton.jit
def segsum_kernel(v_ptr, off_ptr, out_ptr, D, v_s0, v_s1, off_s, o_s0, BLOCK_D: tl.constexpr):
    seg = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < D
    start = tl.load(off_ptr + seg * off_s)
    end = tl.load(off_ptr + (seg + 1) * off_s)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for r in range(start, end):
        acc += tl.load(v_ptr + r * v_s0 + cols * v_s1, mask=cmask, other=0.0).to(tl.float32)
    tl.store(out_ptr + seg * o_s0 + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


def custom_kernel(data):
    values, offsets = data
    segs = offsets.numel() - 1
    d = values.shape[1]
    out = torch.empty((segs, d), dtype=values.dtype, device=values.device)
    grid = (segs, triton.cdiv(d, 64))
    segsum_kernel[grid](
        values, offsets, out, d, values.stride(0), values.stride(1), offsets.stride(0), out.stride(0), BLOCK_D=64
    )
    return out
