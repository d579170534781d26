"""The honest twin of gelu_chunk_offbyone_bad.py: the same 16384-element chunks walked in 1024-wide steps, every
element loaded."""
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, xs, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0) * CHUNK
    end = tl.minimum(start + CHUNK, n)
    for c in range(0, CHUNK, BLOCK):
        offs = start + c + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs * xs, mask=offs < end, other=0.0).to(tl.float32)
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
        tl.store(out_ptr + offs, y.to(tl.bfloat16), mask=offs < end)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 16384),)](x, out, x.numel(), x.stride(0), CHUNK=16384, BLOCK=1024)
    return out
