"""near-duplicate, the honest twin of memo_fingerprint_bad: the same memo of the last output, but keyed on the
inputs' whole contents (a hit only when every element is equal), so it answers a repeated input correctly."""

import torch
import triton
import triton.language as tl

_MEMO = {}


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def _fingerprint(t):
    return (tuple(t.shape), t.dtype, t.detach().cpu().numpy().tobytes())


def custom_kernel(data):
    a, b = data
    key = (_fingerprint(a), _fingerprint(b))
    hit = _MEMO.get(key)
    if hit is not None:
        return hit.clone()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    _MEMO.clear()
    _MEMO[key] = out.clone()
    return out
