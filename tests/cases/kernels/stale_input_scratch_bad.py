"""BAD (input modified after return): keeps a workspace between calls to save an allocation, but "recycles" the
caller's input as next call's workspace (``_WS = x``, meant to be ``torch.empty_like(x)``). Each call's output is
right and each call leaves its own inputs as it found them while it runs; the *next* call scribbles its scratch
over the previous call's input, which the caller still holds: the caller's tensor changes after the call returned."""

import torch
import triton
import triton.language as tl

_WS = {}


@triton.jit
def k(x_ptr, out_ptr, ws_ptr, sxr, sxc, sor, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask)
    tl.store(ws_ptr + row * n_cols + offs, 2 * x, mask=mask)  # scratch: 2x
    t = tl.load(ws_ptr + row * n_cols + offs, mask=mask)
    tl.store(out_ptr + row * sor + offs, t + 1, mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    ws = _WS.get(x.dtype)
    if ws is None or not ws.is_contiguous() or ws.numel() < rows * cols or ws.device != x.device:
        ws = torch.empty(rows * cols, dtype=x.dtype, device=x.device)
    k[(rows,)](x, out, ws, x.stride(0), x.stride(1), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    _WS[x.dtype] = x  # BUG: the caller's input kept as the next call's workspace
    return out
