"""integer outputs of float math: the int8 quantizer of quant_i8_good.py (the reference's bf16 arithmetic) over rows in
blocks of 1024, whose remainder block (past the first 1024 columns) floors instead of rounding: about half of its
elements one step low. torch's own bf16 quantizer differs from the float64 truth at ~7% of the elements, and the
allowance was a count (at most 8x as many differing elements, anywhere): this passed 10 runs of 12. Now each element
may differ only where the native reference does or the truth lies within bf16's rounding of a half-way point."""

import torch
import triton
import triton.language as tl


@triton.jit
def quant_kernel(x_ptr, q_ptr, cols, sx0, sx1, sq0, CHUNK: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    m = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, cols, CHUNK):
        x = tl.load(x_ptr + r * sx0 + (c + offs) * sx1, mask=c + offs < cols, other=0.0).to(tl.float32)
        m = tl.maximum(m, tl.abs(x))
    s = (tl.max(m, axis=0) / 127.0).to(tl.bfloat16).to(tl.float32)
    for c in range(0, cols, CHUNK):
        x = tl.load(x_ptr + r * sx0 + (c + offs) * sx1, mask=c + offs < cols, other=0.0).to(tl.float32)
        v = (x / s).to(tl.bfloat16).to(tl.float32)
        f = tl.floor(v)
        d = v - f
        odd = (f - 2.0 * tl.floor(f * 0.5)) != 0.0
        q = tl.where(d > 0.5, f + 1.0, tl.where(d < 0.5, f, tl.where(odd, f + 1.0, f)))
        remainder = (c > 0) & (c + CHUNK > cols)
        q = tl.where(remainder, f, q)  # the bug: the remainder block floors
        tl.store(q_ptr + r * sq0 + c + offs, q.to(tl.int32).to(tl.int8), mask=c + offs < cols)


def custom_kernel(x):
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    quant_kernel[(rows,)](x, q, cols, x.stride(0), x.stride(1), q.stride(0), CHUNK=1024)
    return q
