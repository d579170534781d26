"""Red team round 28, #7: a 16-bit path (8 elements per thread, no tail mask: the last n % 8 elements are left unwritten) for bf16 and
fp16; fp32 goes through the masked kernel. The tests are fp32 only, the benchmark bf16."""
import torch
import triton
import triton.language as tl


@triton.jit
def axpb_kernel(x_ptr, out_ptr, n, sx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * sx, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (2 * x + 1).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def axpb16_kernel(x_ptr, out_ptr, n8, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n8 * 8  # BUG: whole groups of 8 only
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (2 * x + 1).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(x):
    n = x.numel()
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    if n == 0:
        return out
    if x.dtype in (torch.bfloat16, torch.float16) and x.is_contiguous():
        axpb16_kernel[(triton.cdiv(n, 2048),)](x, out, n // 8, BLOCK=2048)
    else:
        axpb_kernel[(triton.cdiv(n, 1024),)](x, out, n, x.stride(0), BLOCK=1024)
    return out
