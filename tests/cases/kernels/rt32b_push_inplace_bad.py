"""Wrong (red team round 32b, #5): an in-place shift-right of each row split along the window: program b reads
state[s - 1], the last element of program b - 1's block, which program b - 1 overwrites. The interpreter gave such
a read the value before the store in forward launches and ran the reader first in reversed ones: the right value
either way, where a GPU can give the overwritten one. Shuffled launches now read as executed. Twin:
rt32b_push_copy_good.py."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def push_kernel(state_ptr, new_ptr, width, s_row, s_col, s_new, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    start = tl.program_id(1) * BLOCK
    cols = start + tl.arange(0, BLOCK)
    row = state_ptr + r * s_row
    m = (cols >= 1) & (cols < width)
    v = tl.load(row + (cols - 1) * s_col, mask=m)
    tl.store(row + cols * s_col, v, mask=m)
    nv = tl.load(new_ptr + r * s_new)
    tl.store(row, nv, mask=start == 0)


def custom_kernel(data):
    state, new = data
    rows, width = state.shape
    if rows == 0 or width == 0:
        return state
    push_kernel[(rows, triton.cdiv(width, BLOCK))](
        state, new, width, state.stride(0), state.stride(1), new.stride(0), BLOCK=BLOCK
    )
    return state
