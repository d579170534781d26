"""Wrong (red team round 32b, #1): round 31 #3's in-place window shift (left by one) split along the window, with an
atomic max of the block (an fp8 scale's amax) between its loads and its stores: every program reached its atomic
before any stored, in both start orders, so every load came before every store and the shift read nothing
overwritten; on a GPU program b + 1 may store first. Shuffled launches start each next program as one more choice
among the paused ones. Twin: rt32b_rollamax_copy_good.py."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def roll_amax_kernel(state_ptr, new_ptr, amax_ptr, width, s_row, s_col, s_new, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    start = tl.program_id(1) * BLOCK
    cols = start + tl.arange(0, BLOCK)
    row = state_ptr + r * s_row
    m = cols < width - 1
    v = tl.load(row + (cols + 1) * s_col, mask=m, other=0.0)
    tl.atomic_max(amax_ptr + r, tl.max(tl.abs(v.to(tl.float32)), axis=0))
    tl.store(row + cols * s_col, v, mask=m)
    last = (width - 1 >= start) & (width - 1 < start + BLOCK)
    if last:
        nv = tl.load(new_ptr + r * s_new)
        tl.atomic_max(amax_ptr + r, tl.abs(nv.to(tl.float32)))
        tl.store(row + (width - 1) * s_col, nv)


def custom_kernel(data):
    state, new = data
    rows, width = state.shape
    amax = torch.zeros(rows, dtype=torch.float32, device=state.device)
    if rows == 0 or width == 0:
        return state, amax
    roll_amax_kernel[(rows, triton.cdiv(width, BLOCK))](
        state, new, amax, width, state.stride(0), state.stride(1), new.stride(0), BLOCK=BLOCK
    )
    return state, amax
