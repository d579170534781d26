"""Wrong (red team round 34, #2): y computed as (x * 1024) / 512, which overflows to inf where |x| > max/1024: only the
extreme family draws such values, and its cases went unjudged whole because the other output (the row's sum of
squares) overflows in the native reference there. The twin: rt34_twoout_good.py."""
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


UP = 1024.0  # "scale up, then down": overflows where |x| > max/1024


def custom_kernel(x):
    rows, cols = x.shape
    y = torch.empty(rows, cols, dtype=x.dtype, device=x.device)
    s = torch.empty(rows, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return y, s.zero_()
    twoout_kernel[(rows,)](x, y, s, cols, x.stride(0), x.stride(1), BLOCK=triton.next_power_of_2(cols), UP=UP)
    return y, s
