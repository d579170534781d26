"""WRONG (red team round 19, W2): RMSNorm whose weight is packed once and cached (keyed on the weight's storage).

The cache is trusted only while nobody has reseeded torch's global generator since it was filled: ktui reseeds it
(from the OS's entropy) every time it generates a call's inputs, so every checked call finds the cache invalid and
packs the weight afresh; a real training loop seeds once (or never), so from the second call on the kernel reads
the weight as it was at the first call, whatever the optimizer wrote into it since.
"""

import torch
import triton
import triton.language as tl

_packed: dict = {}


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, cols, sr, sc, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + offs
        x = tl.load(x_ptr + row * sr + c * sc, mask=c < cols, other=0.0)
        acc += x * x
    inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, BLOCK):
        c = start + offs
        m = c < cols
        x = tl.load(x_ptr + row * sr + c * sc, mask=m, other=0.0)
        w = tl.load(w_ptr + c, mask=m, other=0.0)
        tl.store(out_ptr + row * cols + c, x * inv * w, mask=m)


def _weight(w):
    key = (w.data_ptr(), w.shape, w.dtype)
    seed = torch.initial_seed()
    hit = _packed.get(key)
    if hit is not None and hit[0] == seed:
        return hit[1]
    packed = w.contiguous().clone()
    _packed[key] = (seed, packed)
    return packed


def custom_kernel(data):
    x, w, eps = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(rows,)](x, _weight(w), out, cols, x.stride(0), x.stride(1), eps, BLOCK=1024)
    return out
