"""GOOD (value-dependent grid): ragged rows: the grid covers only the columns some row uses (max(lengths), read
once on the host); the output starts as zeros, so columns past every row's length need no work, and a batch of
empty rows launches nothing."""
import torch
import triton
import triton.language as tl


@triton.jit
def ragged_kernel(x_ptr, len_ptr, out_ptr, x_rs, x_cs, len_s, out_rs, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    n = tl.load(len_ptr + row * len_s)
    mask = (offs < n) & (offs < n_cols)
    x = tl.load(x_ptr + row * x_rs + offs * x_cs, mask=mask, other=0.0)
    tl.store(out_ptr + row * out_rs + offs, x * 2, mask=mask)


def custom_kernel(data):
    x, lengths = data
    rows, cols = x.shape
    out = torch.zeros((rows, cols), dtype=x.dtype, device=x.device)
    max_len = min(int(lengths.max()), cols) if rows else 0
    if max_len == 0:
        return out  # every row is empty
    grid = (rows, triton.cdiv(max_len, 1024))
    ragged_kernel[grid](x, lengths, out, x.stride(0), x.stride(1), lengths.stride(0), out.stride(0), cols, BLOCK=1024)
    return out
