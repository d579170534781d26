"""HONEST twin of rt11_mm32_default_dot_bad.py: the same kernel with input_precision="ieee" (true fp32 products)."""

import torch
import triton
import triton.language as tl

import ktui.trace.triton as kt  # region markers for the trace rung: no-ops in every other build


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    with kt.region("mainloop"):
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + offs_k
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :] * stride_ak,
                        mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptr + ks[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                        mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
    with kt.region("epilogue"):
        c = acc.to(c_ptr.dtype.element_ty)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def custom_kernel(data):
    a, b = data
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=2)
    return c
