"""Honest twin of rt34_twoout_scale_overflow_bad.py: y = x * 2 and the row's sum of squares in float32, one program a
row."""
import torch
import triton
import triton.language as tl


@triton.jit
def twoout_kernel(x_ptr, y_ptr, s_ptr, cols, sx0, sx1, BLOCK: tl.constexpr, UP: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < cols
    x = tl.load(x_ptr + row * sx0 + c * sx1, mask=m, other=0.0)
    tl.store(y_ptr + row * cols + c, (x * UP) / (UP / 2), mask=m)
    tl.store(s_ptr + row, tl.sum(x * x, axis=0))


UP = 2.0


def custom_kernel(x):
    rows, cols = x.shape
    y = torch.empty(rows, cols, dtype=x.dtype, device=x.device)
    s = torch.empty(rows, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return y, s.zero_()
    twoout_kernel[(rows,)](x, y, s, cols, x.stride(0), x.stride(1), BLOCK=triton.next_power_of_2(cols), UP=UP)
    return y, s
