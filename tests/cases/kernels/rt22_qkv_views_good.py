"""HONEST (red team round 22, F7): q scaled by 1/sqrt(d) in Triton; k and v returned as the same views of qkv that
torch.split gives the reference (zero-copy: exactly the reference's contract)."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_q_kernel(qkv_ptr, q_ptr, s_t, s_c, d, scale, BLOCK: tl.constexpr):
    t = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = c < d
    x = tl.load(qkv_ptr + t * s_t + c * s_c, mask=m).to(tl.float32)
    tl.store(q_ptr + t * d + c, (x * scale).to(q_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    (qkv,) = data
    tokens, three_d = qkv.shape
    d = three_d // 3
    q = torch.empty((tokens, d), dtype=qkv.dtype, device=qkv.device)
    scale_q_kernel[(tokens, triton.cdiv(d, 1024))](qkv, q, qkv.stride(0), qkv.stride(1), d, d**-0.5, BLOCK=1024)
    _, k, v = qkv.split(d, dim=-1)
    return q, k, v
