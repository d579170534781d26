"""BAD (input-mutation inside a dataclass, hidden): uses the middle of data.y as scratch, as dataclass_scratch_bad.py
does, then points the field at a clean copy it took first: read through the fields after the call, the inputs looked
untouched, while the caller's own tensor (which it still holds) was written. The caller's objects are checked now,
as flattened before the call."""

import triton
import triton.language as tl


@triton.jit
def fma(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) * scale + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, v, mask=mask)
    inner = mask & (offs >= 3) & (offs < n - 3)
    tl.store(y_ptr + offs, v, mask=inner)  # scratch: the "last use" of y


def custom_kernel(data):
    clean = data.y.clone()
    out = data.x.new_empty(data.x.shape)
    n = data.x.numel()
    fma[(triton.cdiv(n, 1024),)](data.x, data.y, out, n, data.scale, BLOCK=1024)
    data.y = clean  # the bug: the caller's tensor was written; the field now shows a clean copy
    return out
