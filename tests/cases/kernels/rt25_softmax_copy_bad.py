"""BAD (red team round 25, #13): times torch, not a kernel: torch's softmax does the work; a Triton kernel only copies its result into the output
(the launch "computes" what is returned, so the dry call, where it does not run, returns no reference output)."""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


def custom_kernel(x):
    tmp = torch.softmax(x, dim=-1).contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
    return out
