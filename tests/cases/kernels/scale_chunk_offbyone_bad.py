"""Red team round 10 (W6b): x * alpha in 16384-element chunks whose load mask is off by one (`< end - 1`): the last
element of every full chunk is stored as 0. 1 to 4 of up to 65536 elements wrong: PSNR, cosine and the 1%
elementwise allowance cannot see it."""
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, xs, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0) * CHUNK
    end = tl.minimum(start + CHUNK, n)
    load_end = tl.where(end - start == CHUNK, end - 1, end)  # bug: the full chunk's last element is not loaded
    for c in range(0, CHUNK, BLOCK):
        offs = start + c + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs * xs, mask=offs < load_end, other=0.0).to(tl.float32)
        tl.store(out_ptr + offs, (x * alpha).to(tl.bfloat16), mask=offs < end)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    scale_kernel[(triton.cdiv(x.numel(), 16384),)](x, out, alpha, x.numel(), x.stride(0), CHUNK=16384, BLOCK=1024)
    return out
