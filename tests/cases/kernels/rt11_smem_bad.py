"""BAD (red team round 11 W2): kernels/matmul/v1.py, with "bigger tiles for big matrices": 256x256x128 tiles, 3 stages when M and N are
2048 or more. That launch needs 3 x (256x128 + 128x256) x 2 B = 384 KiB of shared memory, past the H200's 227 KiB
per block: it compiles for sm_90a, but every GPU refuses to launch it (Triton: OutOfResources: shared memory). Only
the benchmark size dispatches it; ktui's CPU ladder compiles it in the dumps rung, prints its smem and passes."""

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
            acc = tl.dot(a, b, acc)
    with kt.region("epilogue"):
        c = acc.to(c_ptr.dtype.element_ty)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def custom_kernel(data):
    a, b = data
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    big = M >= 2048 and N >= 2048
    bm, bn, bk, stages = (256, 256, 128, 3) if big else (64, 64, 32, 2)
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=8 if big else 4, num_stages=stages)
    return c
