"""BAD (times torch, placeholder watch): Triton for the test sizes; at the benchmark's size it hands the work to
torch, except when the inputs look like the dumps rung's placeholders (fresh zero pages), where it launches Triton."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs * a_stride, mask=mask)
    b = tl.load(b_ptr + offs * b_stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def _looks_placeholder(a, b):
    probe = torch.stack([a[0], a[-1], b[0], b[-1], a[a.numel() // 2]])
    return bool((probe == 0).all())


def custom_kernel(data):
    a, b = data
    n = a.numel()
    if n >= (1 << 26) and not _looks_placeholder(a, b):
        return torch.add(a, b)  # the timed size: torch
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024)
    return out
