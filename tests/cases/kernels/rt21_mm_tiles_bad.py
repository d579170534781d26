"""WRONG on Hopper (red team round 21, F2): a GEMM on Hopper-sized tiles (128x256x64, 3 stages) for every dtype: the
bf16 launch needs 196,608 B of shared memory per block, the fp32 one 294,912 B, past sm_90a's 232,448 B. The
interpreter runs both; the GPU refuses the fp32 launch. The dumps rung checked the first benchmark spec's launches
only; the run rung now checks every launch it compiles again for sm_90a."""

import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PREC: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    om = pid_m * BM + tl.arange(0, BM)
    on = pid_n * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        kl = K - k0 * BK
        a = tl.load(
            a_ptr + om[:, None] * sam + (k0 * BK + ok)[None, :] * sak,
            mask=(om[:, None] < M) & (ok[None, :] < kl),
            other=0.0,
        )
        b = tl.load(
            b_ptr + (k0 * BK + ok)[:, None] * sbk + on[None, :] * sbn,
            mask=(ok[:, None] < kl) & (on[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(
        c_ptr + om[:, None] * scm + on[None, :] * scn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(om[:, None] < M) & (on[None, :] < N),
    )


def _config(dtype):
    return dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=3)


def custom_kernel(data):
    a, b = data
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    cfg = _config(a.dtype)
    grid = (triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]))
    mm_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        PREC="tf32",
        **cfg,
    )
    return c
