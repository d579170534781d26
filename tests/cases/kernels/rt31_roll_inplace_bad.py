"""Wrong (red team round 31, #3): an in-place window shift (state[:, :-1] = state[:, 1:]; state[:, -1] = new) split
along the window: each program moves state[r, s+1 : s+BLOCK+1] to state[r, s : s+BLOCK], so it reads the first
element of the next block, which the next program overwrites. On a GPU the next program may store first. The
interpreter ran programs in order, so every read came before the overwrite; every other launch or so now runs its
programs from the last (``interp_sched.reversed_order``), and the read gets the overwritten value."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def roll_kernel(state_ptr, new_ptr, width, s_row, s_col, s_new, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    start = tl.program_id(1) * BLOCK
    cols = start + tl.arange(0, BLOCK)
    row = state_ptr + r * s_row
    v = tl.load(row + (cols + 1) * s_col, mask=cols < width - 1)
    tl.store(row + cols * s_col, v, mask=cols < width - 1)
    nv = tl.load(new_ptr + r * s_new)
    tl.store(row + (width - 1) * s_col, nv, mask=(width - 1 >= start) & (width - 1 < start + BLOCK))


def custom_kernel(data):
    state, new = data
    rows, width = state.shape
    if rows == 0 or width == 0:
        return state
    roll_kernel[(rows, triton.cdiv(width, BLOCK))](
        state, new, width, state.stride(0), state.stride(1), new.stride(0), BLOCK=BLOCK
    )
    return state
