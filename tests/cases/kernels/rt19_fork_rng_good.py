"""Honest twin of rt19_seed_after_first_bad and rt19_tf32_after_calls_bad: RMSNorm that draws random numbers of its
own under ``torch.random.fork_rng`` (a jitter it then multiplies by zero) and sets TF32 only inside a try/finally
that puts it back: the caller's seed, stream and flags are as the call found them."""

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
    x, w, eps = data
    gen = torch.Generator(device=x.device).manual_seed(1234)  # a local generator: the caller's stream untouched
    jitter = torch.rand((), generator=gen, device=x.device)
    with torch.random.fork_rng(devices=[x.device] if x.is_cuda else []):  # and the global one, forked
        torch.manual_seed(99)
        jitter = jitter + torch.rand((), device=x.device)
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        rmsnorm_kernel[(rows,)](
            x, w, out, cols, x.stride(0), x.stride(1), w.stride(0), eps + 0.0 * float(jitter), BLOCK=1024
        )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return out
