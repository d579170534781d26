"""Honest (red team round 30, #7), trusting lengths <= T as any pooling kernel does: under rt30_meanpool (whose mask
and clamp take any length) dist=intrange fails it, and the message says how the reference rules such lengths out;
under rt30_meanpool_checked (which asserts 0 <= lengths <= T) it passes. (Honest in real use, lengths <= T; fails on intrange lengths past T.) Masked mean pooling: one program per (sequence, column block); the loop runs over the sequence's own length."""
import torch
import triton
import triton.language as tl


@triton.jit
def _mean_pool(x_ptr, len_ptr, out_ptr, D, sx0, sx1, sx2, sl, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cm = cols < D
    n = tl.load(len_ptr + b * sl)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for r in range(0, n):
        acc += tl.load(x_ptr + b * sx0 + r * sx1 + cols * sx2, mask=cm, other=0.0).to(tl.float32)
    tl.store(out_ptr + b * D + cols, (acc / tl.maximum(n, 1).to(tl.float32)).to(out_ptr.dtype.element_ty), mask=cm)


def custom_kernel(data):
    x, lengths = data
    B, T, D = x.shape
    out = torch.empty(B, D, dtype=x.dtype, device=x.device)
    if B == 0 or D == 0:
        return out
    BLOCK_D = min(256, triton.next_power_of_2(D))
    _mean_pool[(B, triton.cdiv(D, BLOCK_D))](x, lengths, out, D, x.stride(0), x.stride(1), x.stride(2),
                                             lengths.stride(0), BLOCK_D=BLOCK_D)
    return out
