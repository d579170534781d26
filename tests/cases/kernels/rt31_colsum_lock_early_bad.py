"""Wrong (red team round 31, #5; new-user trial 31, F5, the same in a LayerNorm backward): column sums added into
the output under a spin lock per column block (atomic_cas to take it, atomic_xchg to give it back), as Triton's
layer-norm backward tutorial accumulates dW, but the lock given back before the store it guards: the next holder can
read the sum before this one's store lands and lose it. Any compare-and-swap used to exempt the launch; now the
lock orders only what its holder stored before the release."""
import torch
import triton
import triton.language as tl

BR = 64
BC = 64


@triton.jit
def colsum_kernel(x_ptr, out_ptr, lock_ptr, rows, cols, s_r, s_c, BR: tl.constexpr, BC: tl.constexpr):
    rb = tl.program_id(0)
    cb = tl.program_id(1)
    r = rb * BR + tl.arange(0, BR)
    c = cb * BC + tl.arange(0, BC)
    x = tl.load(x_ptr + r[:, None] * s_r + c[None, :] * s_c, mask=(r[:, None] < rows) & (c[None, :] < cols), other=0.0)
    part = tl.sum(x, axis=0)
    lock = lock_ptr + cb
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    acc = tl.load(out_ptr + c, mask=c < cols, other=0.0) + part
    tl.atomic_xchg(lock, 0)
    tl.store(out_ptr + c, acc, mask=c < cols)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.zeros(cols, dtype=x.dtype, device=x.device)
    if rows == 0 or cols == 0:
        return out
    locks = torch.zeros(triton.cdiv(cols, BC), dtype=torch.int32, device=x.device)
    colsum_kernel[(triton.cdiv(rows, BR), triton.cdiv(cols, BC))](
        x, out, locks, rows, cols, x.stride(0), x.stride(1), BR=BR, BC=BC
    )
    return out
