"""Red team round 28, #2: a column-parallel scan along dim 0. Up to 8192 rows one tl.cumsum over the whole column block; longer
sequences go chunk by chunk, but the carry is set to the previous chunk's total instead of added to (carry = s
instead of carry += s): from the third chunk on every output is short by the chunks before the last one."""
import torch
import triton
import triton.language as tl


@triton.jit
def scan_one(x_ptr, out_ptr, T, C, sx0, sx1, BT: tl.constexpr, BC: tl.constexpr):
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    rows = tl.arange(0, BT)
    m = (rows[:, None] < T) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * sx0 + cols[None, :] * sx1, mask=m, other=0.0).to(tl.float32)
    y = tl.cumsum(x, axis=0)
    tl.store(out_ptr + rows[:, None] * C + cols[None, :], y, mask=m)


@triton.jit
def scan_chunked(x_ptr, out_ptr, T, C, sx0, sx1, BT: tl.constexpr, BC: tl.constexpr):
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    cm = cols < C
    carry = tl.zeros([BC], dtype=tl.float32)
    for t0 in range(0, T, BT):
        rows = t0 + tl.arange(0, BT)
        m = (rows[:, None] < T) & cm[None, :]
        x = tl.load(x_ptr + rows[:, None] * sx0 + cols[None, :] * sx1, mask=m, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry[None, :]
        tl.store(out_ptr + rows[:, None] * C + cols[None, :], y, mask=m)
        carry = tl.sum(x, axis=0)  # BUG: should be carry += (the chunk's total)


def custom_kernel(x):
    T, C = x.shape
    out = torch.empty((T, C), dtype=x.dtype, device=x.device)
    if T == 0 or C == 0:
        return out
    if T <= 8192:
        BT = triton.next_power_of_2(T)
        BC = max(1, min(triton.next_power_of_2(C), 8192 // BT))
        scan_one[(triton.cdiv(C, BC),)](x, out, T, C, x.stride(0), x.stride(1), BT=BT, BC=BC)
    else:
        BC = min(32, triton.next_power_of_2(C))
        scan_chunked[(triton.cdiv(C, BC),)](x, out, T, C, x.stride(0), x.stride(1), BT=1024, BC=BC)
    return out
