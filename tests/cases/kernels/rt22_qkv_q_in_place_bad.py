"""WRONG (red team round 22, F7's twin): q scaled in place inside the caller's qkv and returned as a view of it:
the input changes, and out[0] aliases it where the reference's q is memory of its own."""

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
    q = qkv[:, :d]  # scaled in place, inside the caller's qkv: a view the reference does not return
    scale_q_kernel[(tokens, triton.cdiv(d, 1024))](qkv, q, qkv.stride(0), qkv.stride(1), d, d**-0.5, BLOCK=1024)
    _, k, v = qkv.split(d, dim=-1)
    return q, k, v
