"""Row softmax, persistent, honest: rows pid, pid + P, ... < rows; the SM count read as most
code reads it, from the input's own device (torch.cuda.get_device_properties(x.device))."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_persistent(x_ptr, out_ptr, x_row_stride, x_col_stride, out_row_stride, out_col_stride, n_rows, n_cols,
                       n_waves, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    for row in range(pid, n_rows, nprog):
        x = tl.load(x_ptr + row * x_row_stride + offs * x_col_stride, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_row_stride + offs * out_col_stride, y.to(out_ptr.dtype.element_ty), mask=mask)


_SMS = None


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    global _SMS
    if _SMS is None:
        _SMS = torch.cuda.get_device_properties(x.device).multi_processor_count
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    num_warps = min(16, max(4, block // 512))
    grid = min(rows, _SMS)
    n_waves = triton.cdiv(rows, grid)
    softmax_persistent[(grid,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), rows, cols, n_waves,
                                BLOCK=block, num_warps=num_warps)
    return out
