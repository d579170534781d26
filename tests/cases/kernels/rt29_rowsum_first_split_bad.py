"""Wrong on a GPU (red team round 29, #4): split-K row sums where split 0 stores its partial and the other splits
tl.atomic_add theirs: right only while program 0 runs first, as the interpreter always runs it; on a GPU the store
can erase an earlier add. The CPU run passes and warns (worker.interp_races)."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _rowsum_split(x_ptr, out_ptr, cols, sx0, sx1, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    s = tl.program_id(1)
    offs = s * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + r * sx0 + offs * sx1, mask=offs < cols, other=0.0), axis=0)
    # BUG: the first split initializes the output and the others accumulate into it: assumes split 0 runs first
    if s == 0:
        tl.store(out_ptr + r, part)
    else:
        tl.atomic_add(out_ptr + r, part)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0 or cols == 0:
        return out.zero_()
    _rowsum_split[(rows, triton.cdiv(cols, BLOCK))](x, out, cols, x.stride(0), x.stride(1), BLOCK=BLOCK)
    return out
