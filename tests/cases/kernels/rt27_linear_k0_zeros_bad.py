"""Linear x @ w + b: tiled fp32 GEMM with the bias fused into the epilogue. For K == 0 the host returns zeros early
(nothing to multiply) -- and forgets the bias: an empty-K layer returns 0 instead of b."""

import torch
import triton
import triton.language as tl


@triton.jit
def linear_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swk, swn, sb, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * sxm + rk[None, :] * sxk, mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0
        )
        b = tl.load(
            w_ptr + rk[:, None] * swk + rn[None, :] * swn, mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a, b, input_precision="ieee")
    bias = tl.load(b_ptr + rn * sb, mask=rn < N, other=0.0)
    acc += bias[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def custom_kernel(data):
    x, w, b = data
    M, K = x.shape
    N = w.shape[1]
    out = torch.empty((M, N), dtype=torch.float32, device=x.device)
    if K == 0 or M == 0 or N == 0:
        return out.zero_()  # nothing to multiply
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    linear_kernel[grid](
        x, w, b, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), b.stride(0), BM=32, BN=32, BK=32
    )
    return out
