"""Honest twin of rt32b_rollamax_inplace_bad.py: the shift reads from a copy of the state and writes the state in
place, folding each block's |max| into the row's amax with an atomic."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def roll_amax_kernel(src_ptr, state_ptr, new_ptr, amax_ptr, width, r_row, r_col, s_row, s_col, s_new,
                     BLOCK: tl.constexpr):
    r = tl.program_id(0)
    start = tl.program_id(1) * BLOCK
    cols = start + tl.arange(0, BLOCK)
    row = state_ptr + r * s_row
    m = cols < width - 1
    v = tl.load(src_ptr + r * r_row + (cols + 1) * r_col, mask=m, other=0.0)
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
    src = state.clone()  # read from a copy: no program reads what another writes
    roll_amax_kernel[(rows, triton.cdiv(width, BLOCK))](
        src, state, new, amax, width, src.stride(0), src.stride(1), state.stride(0), state.stride(1), new.stride(0),
        BLOCK=BLOCK,
    )
    return state, amax
