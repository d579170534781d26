"""WRONG: RMSNorm that turns on TF32 matmuls for the whole program once it has been called 150 times (a warm-up
"tuning" that changes every later matmul of its caller): no checked call of the run rung changes anything; the
benchmark rung's stretch of calls in a row (the verified stretch on the CPU, the timed calls on a GPU) does, and is
judged whole (``ktui.worker.timed.settled``)."""

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


_calls = [0]


def custom_kernel(data):
    _calls[0] += 1
    if _calls[0] == 150:
        torch.backends.cuda.matmul.allow_tf32 = True  # "warmed up": fast matmuls from now on
    x, w, eps = data
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    rmsnorm_kernel[(rows,)](x, w, out, cols, x.stride(0), x.stride(1), w.stride(0), eps, BLOCK=1024)
    return out
