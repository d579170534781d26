"""Wrong (red team round 30, #3): bf16 row sums with a tiny online tuner: two configs (one row per program with the whole row in registers, and a
chunked loop of 64-column steps, better for very wide rows); every 64th call on a shape re-times the chunked
config against the current choice, so the pick follows the machine's load."""

import time

import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_whole_kernel(x_ptr, out_ptr, cols, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * sx0 + offs * sx1, mask=offs < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(x, axis=0).to(out_ptr.dtype.element_ty))


@triton.jit
def rowsum_chunked_kernel(x_ptr, out_ptr, cols, sx0, sx1, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, cols - 1, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        acc += tl.load(x_ptr + row * sx0 + offs * sx1, mask=offs < cols - 1, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


_calls: dict = {}
_choice: dict = {}


def _whole(x, out):
    rows, cols = x.shape
    rowsum_whole_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=triton.next_power_of_2(cols))


def _chunked(x, out):
    rows, cols = x.shape
    rowsum_chunked_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), CHUNK=64)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    key = tuple(x.shape)
    n = _calls[key] = _calls.get(key, 0) + 1
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    if x.shape[0] == 0:
        return out
    if n % 64 == 0:  # re-tune: time the chunked config on this call's data
        t0 = time.perf_counter()
        _chunked(x, out)
        t = time.perf_counter() - t0
        if t < _choice.get(key, (None, float("inf")))[1] * 0.8:
            _choice[key] = (_chunked, t)
        return out
    fn = _choice.get(key, (_whole, 0.0))[0]
    if key not in _choice:
        t0 = time.perf_counter()
        _whole(x, out)
        _choice[key] = (_whole, time.perf_counter() - t0)
        return out
    fn(x, out)
    return out
