"""BAD (tf32): an fp32 matmul whose operands go through TF32 (10-bit mantissa), as tl.dot's default does on a GPU.
On the CPU the interpreter computes in fp32, so this version rounds the operands itself to show the same error; on
a GPU set KTUI_REAL_TF32=1 to use tl.dot's own TF32 instead."""

import os

import torch
import triton
import triton.language as tl

REAL_TF32 = os.environ.get("KTUI_REAL_TF32") == "1"


@triton.jit
def tf32(x):
    bits = x.to(tl.int32, bitcast=True)
    return ((bits + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  EMULATE: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        if EMULATE:
            acc = tl.dot(tf32(a), tf32(b), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc, input_precision="tf32")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def custom_kernel(data):
    a, b = data
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    matmul_kernel[grid](a, b, c, M, N, K, BM=32, BN=32, BK=32, EMULATE=not (REAL_TF32 and a.is_cuda))
    return c
