"""BAD (tail-mask, GEMM): the grid is M // 64 by N // 64: the last partial tile row and column are never computed."""

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BLOCK: tl.constexpr,
                  BK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * sam + ks[None, :] * sak, mask=(rm[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + ks[:, None] * sbk + rn[None, :] * sbn, mask=(ks[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def custom_kernel(data):
    a, b = data
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (max(M // 64, 1), max(N // 64, 1))  # BUG: floor division drops the tails
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK=64, BK=32)
    return c
