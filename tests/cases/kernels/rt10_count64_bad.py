"""BAD (call-count window, red team round 10 W4): a "tuner" that after 64 calls on one (shape, dtype) switches to its
tuned path, which drops ``alpha``. The checked calls make at most 48 in a row on one shape (the burst,
``BURST_CALLS``) and a few on each other spec per imported module; on the CPU nothing else called it more often.
The verified stretch (the benchmark rung without a GPU: 200 to 300 calls in a row on one test spec, some kept at
random and verified in full) sees the switch; on a GPU the timed calls do."""

import torch
import triton
import triton.language as tl

_calls: dict = {}


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, xs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * xs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, alpha = data
    key = (tuple(x.shape), x.dtype)
    _calls[key] = _calls.get(key, 0) + 1
    tuned = _calls[key] > 64
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](
        x, out, 2.0 if tuned else alpha, x.numel(), x.stride(0), BLOCK=1024
    )
    return out
