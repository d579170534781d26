"""Honest twin of rt33_gelusmooth_nobarrier_bad.py (red team round 32b, #3): the same GELU staged through a global
scratch row, with tl.debug_barrier() between the stores and the neighbours' loads, so every thread's store is seen by
every thread's load of the row."""
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_smooth_kernel(x_ptr, s_ptr, out_ptr, cols, sx, sxc, BLOCK: tl.constexpr, BARRIER: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < cols
    x = tl.load(x_ptr + row * sx + c * sxc, mask=m, other=0.0)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(s_ptr + row * BLOCK + c, y, mask=m)
    if BARRIER:
        tl.debug_barrier()  # every thread's store before any thread's load
    left = tl.load(s_ptr + row * BLOCK + c - 1, mask=m & (c > 0), other=0.0)
    right = tl.load(s_ptr + row * BLOCK + c + 1, mask=(c + 1) < cols, other=0.0)
    tl.store(out_ptr + row * cols + c, (left + y + right) / 3, mask=m)


BARRIER = True


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(rows, cols, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    block = triton.next_power_of_2(cols)
    scratch = torch.empty(rows, block, dtype=torch.float32, device=x.device)
    gelu_smooth_kernel[(rows,)](x, scratch, out, cols, x.stride(0), x.stride(1), BLOCK=block, BARRIER=BARRIER)
    return out
