"""Red team round 10 (W6): each program walks a 16384-element chunk in 1024-wide steps; the load mask is off by one
(`< end - 1`), so the last element of every full chunk is computed from 0 and stored as gelu(0) = 0 (the store mask
is right: nothing is unwritten). Sizes under 16384 never show it; fuzzed sizes do, on 1 to 4 of 65536 elements, which
PSNR, cosine and the 1% elementwise allowance cannot see."""
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, xs, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0) * CHUNK
    end = tl.minimum(start + CHUNK, n)
    load_end = tl.where(end - start == CHUNK, end - 1, end)  # bug: the full chunk's last element not loaded
    for c in range(0, CHUNK, BLOCK):
        offs = start + c + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs * xs, mask=offs < load_end, other=0.0).to(tl.float32)
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
        tl.store(out_ptr + offs, y.to(tl.bfloat16), mask=offs < end)


def custom_kernel(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    gelu_kernel[(triton.cdiv(x.numel(), 16384),)](x, out, x.numel(), x.stride(0), CHUNK=16384, BLOCK=1024)
    return out
