"""BAD (shape-class): row softmax with a separate path for rows wider than 32,768 columns (three passes over
chunks: max, sum, write), whose sum pass stops one chunk early. Every test row fits the one-block path."""

import torch
import triton
import triton.language as tl

WIDE = 32_768
CHUNK = 8192


@triton.jit
def softmax_row(x_ptr, out_ptr, n_cols, x_rs, out_rs, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_rs + offs, mask=offs < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_rs + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


@triton.jit
def softmax_wide(x_ptr, out_ptr, n_cols, x_rs, out_rs, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    m = tl.full([CHUNK], -float("inf"), tl.float32)
    for start in range(0, n_cols, CHUNK):
        m = tl.maximum(m, tl.load(x_ptr + row * x_rs + start + offs, mask=start + offs < n_cols, other=-float("inf")))
    mx = tl.max(m, axis=0)
    s = tl.zeros([CHUNK], tl.float32)
    for start in range(0, n_cols - CHUNK, CHUNK):  # BUG: the last chunk is left out of the sum
        x = tl.load(x_ptr + row * x_rs + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        s += tl.exp(x - mx)
    total = tl.sum(s, axis=0)
    for start in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * x_rs + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * out_rs + start + offs, tl.exp(x - mx) / total, mask=start + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    if cols > WIDE:
        softmax_wide[(rows,)](x, out, cols, x.stride(0), out.stride(0), CHUNK=CHUNK)
    else:
        block = triton.next_power_of_2(cols)
        softmax_row[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block)
    return out
