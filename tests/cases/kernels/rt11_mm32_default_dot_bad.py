"""BAD (red team round 11 W4) on every GPU: kernels/matmul/v1.py run on fp32 operands, tl.dot with its default input_precision, which is
"tf32" for fp32 operands on NVIDIA GPUs (10-bit mantissa: ~1e-3 relative error at K = 320, what ktui's own
matmul_fp32_tf32_bad.py fails for). The Triton interpreter's create_dot ignores input_precision and multiplies in IEEE
fp32, and ktui's interpreter fixes (ktui/worker/interp_fixes.py create_dot) change only bf16 dots: the CPU ladder
checks IEEE products and passes it, with no TF32 flag. (tests/cases/kernels/matmul_fp32_tf32_bad.py emulates the
rounding by hand to be seen on the CPU.)"""

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
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=2)
    return c
