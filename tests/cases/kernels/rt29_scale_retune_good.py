"""Honest twin of rt29_scale_retune_bad: the re-tune times whole launches (the tail masked), so every call is right."""
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _affine(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * sx, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (2.0 * x + 1.0).to(out_ptr.dtype.element_ty), mask=m)


RETUNE_EVERY = 64  # the best block size drifts with clocks and co-running work: re-time it now and then
_state = {}  # (n, dtype) -> [calls, block]


def _timed(x, out, block):
    t0 = time.perf_counter()
    # (the timing launch covers the tail too)
    if x.numel():
        _affine[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), x.stride(0), BLOCK=block)
    return time.perf_counter() - t0


def custom_kernel(x):
    n = x.numel()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    st = _state.setdefault((n, x.dtype), [0, 1024])
    st[0] += 1
    if st[0] % RETUNE_EVERY == 0:  # re-tune on live data: the last candidate's output is the answer
        st[1] = min((1024, 256), key=lambda b: _timed(x, out, b))
        _timed(x, out, st[1])
        return out
    if n:
        _affine[(triton.cdiv(n, st[1]),)](x, out, n, x.stride(0), BLOCK=st[1])
    return out
