"""BAD (persistent waves, red team round 16 M3): Vector add with a grid-stride loop: the grid capped at 4 programs per SM (a common CUDA idiom), each program
stepping over the vector.

Slip: the step is BLOCK, not BLOCK * num_programs: program p covers blocks p .. p + n_iters - 1 (overlapping its
neighbours'), so with one wave (n <= 4 * SMs * BLOCK = 540,672 elements) every element is right, and past it the
blocks beyond grid + n_iters - 1 are never written."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_gridstride(x_ptr, y_ptr, out_ptr, n, n_iters, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    for _ in range(0, n_iters):
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(out_ptr + offs, x + y, mask=m)
        offs += BLOCK  # BUG: should be BLOCK * tl.num_programs(0)


_SMS = None


def custom_kernel(data):
    global _SMS
    x, y = data
    if _SMS is None:
        _SMS = torch.cuda.get_device_properties("cuda").multi_processor_count
    xc, yc = x.contiguous(), y.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    BLOCK = 1024
    blocks = triton.cdiv(n, BLOCK)
    grid = max(1, min(blocks, 4 * _SMS))
    n_iters = triton.cdiv(blocks, grid)
    add_gridstride[(grid,)](xc, yc, out, n, n_iters, BLOCK=BLOCK)
    return out
