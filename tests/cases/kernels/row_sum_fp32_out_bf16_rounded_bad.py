"""BAD (precision): row sums of bf16 rows accumulated in fp32 but rounded to bf16 before the fp32 store: every sum
is off by up to half a bf16 ulp (2**-9 relative), far outside fp32's tolerance, yet within bf16's PSNR, cosine and
elementwise bounds, which judged it while the tolerance followed the lowest precision among the inputs."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, x_rs, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_rs + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
    s = tl.sum(x, axis=0)
    tl.store(out_ptr + row, s.to(tl.bfloat16).to(tl.float32))


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    row_sum[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
