"""Pairs with `tests/cases/references/rt17_add_out_buffer.py`. Wrong: the inputs are read through their strides but
the caller's buffer is written with flat offsets (row * cols + col), so a caller that hands a padded or transposed
buffer (a slice of a wider tensor, `out=big[:, :cols]`) gets its rows scrambled and the padding overwritten, where
`torch.add(x, y, out=out)` honours the buffer's strides. Passes (red team round 17): `_map_inputs` skips declared
output buffers for every layout, so no case ever hands the kernel a non-contiguous buffer."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, cols, sxr, sxc, syr, syc, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c0 = tl.program_id(1) * BLOCK
    offs = c0 + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask)
    y = tl.load(y_ptr + row * syr + offs * syc, mask=mask)
    tl.store(out_ptr + row * cols + offs, x + y, mask=mask)  # the bug: the buffer's own strides ignored


def custom_kernel(data):
    x, y, out = data
    rows, cols = x.shape
    add_kernel[(rows, triton.cdiv(cols, 1024))](x, y, out, cols, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                                                 BLOCK=1024)
    return out
