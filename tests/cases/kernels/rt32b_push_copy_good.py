"""Honest twin of rt32b_push_inplace_bad.py: the shift reads from a copy of the state and writes the state in place."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def push_kernel(src_ptr, state_ptr, new_ptr, width, r_row, r_col, s_row, s_col, s_new, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    start = tl.program_id(1) * BLOCK
    cols = start + tl.arange(0, BLOCK)
    row = state_ptr + r * s_row
    m = (cols >= 1) & (cols < width)
    v = tl.load(src_ptr + r * r_row + (cols - 1) * r_col, mask=m)
    tl.store(row + cols * s_col, v, mask=m)
    nv = tl.load(new_ptr + r * s_new)
    tl.store(row, nv, mask=start == 0)


def custom_kernel(data):
    state, new = data
    rows, width = state.shape
    if rows == 0 or width == 0:
        return state
    src = state.clone()  # read from a copy: no program reads what another writes
    push_kernel[(rows, triton.cdiv(width, BLOCK))](
        src, state, new, width, src.stride(0), src.stride(1), state.stride(0), state.stride(1), new.stride(0),
        BLOCK=BLOCK,
    )
    return state
