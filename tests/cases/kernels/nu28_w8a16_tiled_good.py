"""Honest twin for new-user trial 28, F2: a tiled W8A16 matmul (int8 weights converted to x's dtype in registers,
fp32 accumulation, the scale in the epilogue). On shifted inputs its fp16 outputs pass 65504: it gives inf where the
float64 truth rounds to inf, while the fp16 reference (w * scale rounded first) stays finite."""

import torch
import triton
import triton.language as tl


@triton.jit
def w8a16_mm(x_ptr, w_ptr, s_ptr, b_ptr, out_ptr, M, N, K,
             sxm, sxk, swn, swk, ss, sb, som, son,
             HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mmask = offs_m < M
    nmask = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        kmask = offs_k < K
        x = tl.load(x_ptr + offs_m[:, None] * sxm + offs_k[None, :] * sxk,
                    mask=mmask[:, None] & kmask[None, :], other=0.0)
        w = tl.load(w_ptr + offs_k[:, None] * swk + offs_n[None, :] * swn,
                    mask=kmask[:, None] & nmask[None, :], other=0)
        acc = tl.dot(x, w.to(x.dtype), acc)
    s = tl.load(s_ptr + offs_n * ss, mask=nmask, other=0.0).to(tl.float32)
    acc = acc * s[None, :]
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n * sb, mask=nmask, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None] * som + offs_n[None, :] * son, acc.to(out_ptr.dtype.element_ty),
             mask=mmask[:, None] & nmask[None, :])


def custom_kernel(data):
    x, w, scale, bias = data
    M, K = x.shape
    N = w.shape[0]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    has_bias = bias is not None
    b = bias if has_bias else scale
    BM = 16 if M <= 16 else 64
    BN, BK = 64, 64
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    w8a16_mm[grid](x, w, scale, b, out, M, N, K,
                   x.stride(0), x.stride(1), w.stride(0), w.stride(1), scale.stride(0), b.stride(0),
                   out.stride(0), out.stride(1),
                   HAS_BIAS=has_bias, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    return out
