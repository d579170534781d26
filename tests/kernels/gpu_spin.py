"""BAD (GPU): a kernel that spins forever on a flag nobody sets."""

import torch
import triton
import triton.language as tl


@triton.jit
def spin_kernel(flag_ptr, out_ptr):
    i = 0
    while tl.load(flag_ptr, volatile=True) == 0:
        i += 1
    tl.store(out_ptr, i)


def custom_kernel(data):
    a, b = data
    flag = torch.zeros(1, dtype=torch.int32, device=a.device)
    out = torch.empty(1, dtype=torch.int32, device=a.device)
    spin_kernel[(1,)](flag, out)
    torch.cuda.synchronize()
    return a + b
