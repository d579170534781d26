"""HONEST (new-user trial 26): w8a16 tiled. (BLOCK_M x BLOCK_N) output tiles, int8 tile dequantized to x's dtype (exact for int8),
tl.dot into fp32, per-column scale applied once in the epilogue."""

import torch
import triton
import triton.language as tl


@triton.jit
def w8a16_tiled(x_ptr, w_ptr, s_ptr, o_ptr, M, N, K,
                sxm, sxk, swk, swn, ss, som, son,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * sxm + ks[None, :] * sxk,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + ks[:, None] * swk + offs_n[None, :] * swn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0)
        acc = tl.dot(x, w.to(x.dtype), acc)
    s = tl.load(s_ptr + offs_n * ss, mask=offs_n < N, other=0.0).to(tl.float32)
    out = acc * s[None, :]
    tl.store(o_ptr + offs_m[:, None] * som + offs_n[None, :] * son, out.to(o_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def custom_kernel(data):
    x, w, scale = data
    M, K = x.shape
    N = w.shape[1]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK_M = 16 if M <= 16 else 64
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, 64))
    w8a16_tiled[grid](x, w, scale, out, M, N, K,
                      x.stride(0), x.stride(1), w.stride(0), w.stride(1), scale.stride(0),
                      out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=64, BLOCK_K=32)
    return out
