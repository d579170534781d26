"""BAD (integer outputs, red team round 16 F1): the count kept as a 0-d int32 tensor, the last partial block never
counted: an integer dtype other than the reference's int64 passes, a wrong count does not."""

import torch
import triton
import triton.language as tl


@triton.jit
def count_kernel(x_ptr, cnt_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m, other=0.0)
    c = tl.sum((x > 0).to(tl.int32), axis=0)
    tl.atomic_add(cnt_ptr, c)


def custom_kernel(x):
    cnt = torch.zeros((), dtype=torch.int32, device=x.device)
    n = x.numel()
    # BUG: the last partial block (n % 1024 elements) never counted
    count_kernel[(max(1, n // 1024),)](x, cnt, n, x.stride(0), BLOCK=1024)
    return cnt
