"""BAD (oob into the padding, red team issue 9): a row softmax that, when its input's rows are padded (a row stride
wider than the row), keeps each row's maximum in the first padding slot of that row, x[row, cols], and reads it
back. The output is right and the input's elements are untouched: the write lands in bytes of the input's storage
that no view covers, where no canary is. The guard compares those bytes with what ktui built."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, SCRATCH: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    if SCRATCH:  # the padding as scratch: "free" memory past the row's end
        tl.store(x_ptr + row * x_row_stride + n_cols, m.to(x_ptr.dtype.element_ty))
        m = tl.load(x_ptr + row * x_row_stride + n_cols).to(tl.float32)
    y = tl.exp(x - m)
    tl.store(out_ptr + row * out_row_stride + offs, (y / tl.sum(y, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    if x.stride(-1) != 1:
        x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    scratch = rows > 0 and x.stride(0) > cols
    softmax_kernel[(rows,)](x, out, x.stride(0), out.stride(0), cols, SCRATCH=scratch,
                            BLOCK=triton.next_power_of_2(cols))
    return out
