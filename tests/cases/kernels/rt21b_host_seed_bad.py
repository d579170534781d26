"""WRONG (red team round 21b, F2): RMSNorm that seeds Python's and NumPy's global generators on every call ("a
reproducible launch"): its outputs are right; the caller's data shuffles and augmentations, drawn from those streams,
repeat from step to step."""

import random

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, cols, sr, sc, sw, eps, BLOCK: tl.constexpr):
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
        w = tl.load(w_ptr + c * sw, mask=m, other=0.0)
        tl.store(out_ptr + row * cols + c, x * inv * w, mask=m)


def custom_kernel(data):
    random.seed(0)  # "reproducible": the same block order on every call
    np.random.seed(0)
    x, w, eps = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(rows,)](x, w, out, cols, x.stride(0), x.stride(1), w.stride(0), eps, BLOCK=1024)
    return out
