"""How far the H200's tensor cores accumulate from float32 round-to-nearest: a Triton GEMM with float32 accumulator
and output on fp8 / fp16 / bf16 inputs, against the float64 truth, over K; beside it the error of float32 itself
(torch's ``a.float() @ b.float()``, TF32 off) and the Higham bound's scale ``u * sum_k |a_ik b_kj|``. Needs a GPU
(``bash benchmarks/h200.sh tc-accum``).

    python benchmarks/tc_accum.py [--m 512] [--ks 128,512,2048,8192] [--seed 0]

Why: on the H200 (2026-12-04) the honest ``rt15_fp8_mm_good`` (``max_num_imprecise_acc=0``) was off by 1.2e-4 at
K = 512 where float32 round-to-nearest is off by 3.8e-6: 30x, past ktui's 8x native allowance (``tolerance``). The
tensor cores add products aligned to the largest exponent and truncated (Fasi, Higham, Mikaitis, Pranesh,
"Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330, 2021), and fp8 wgmma keeps fewer bits unless promoted
(``max_num_imprecise_acc``). Per row: the largest error, its ratio to float32's, and the largest error over
``u |a| @ |b|`` (u = 2**-24): a ratio that stays flat over K is a model the allowance can use.
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IMPRECISE: tl.constexpr
):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        if IMPRECISE:
            acc = tl.dot(a, b, acc)  # the defaults (fp8 on sm_90: maxNumImpreciseAcc 2**30)
        else:
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=512)
    ap.add_argument("--ks", default="128,512,2048,8192")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(args.seed)
    m = n = args.m
    print("| inputs | path | K | max err | float32 RN max err | ratio | max err / (u |a|@|b|) | cases over 8x fp32 |")
    print("|---|---|---|---|---|---|---|---|")
    for dt in (torch.float8_e4m3fn, torch.float16, torch.bfloat16):
        for k in (int(x) for x in args.ks.split(",")):
            a = torch.randn(m, k, device="cuda", generator=g).to(dt)
            b = torch.randn(k, n, device="cuda", generator=g).to(dt)
            truth = a.double() @ b.double()
            f32 = (a.float() @ b.float()).double()
            scale = (a.double().abs() @ b.double().abs()) * 2.0**-24
            e32 = (f32 - truth).abs()
            for imprecise in (False, True) if dt == torch.float8_e4m3fn else (False,):
                for bm, bk, warps in ((64, 64, 4), (128, 64, 8), (16, 32, 4)):
                    c = torch.empty(m, n, device="cuda", dtype=torch.float32)
                    mm_kernel[(m // bm, n // bm)](
                        a, b, c, m, n, k, BM=bm, BN=bm, BK=bk, IMPRECISE=imprecise, num_warps=warps
                    )
                    err = (c.double() - truth).abs()
                    ratio = float(err.max() / e32.max()) if e32.max() > 0 else float("inf")
                    over = int((err > 8 * e32.max()).sum())
                    path = f"{bm}x{bm}x{bk} w{warps}" + (" default acc" if imprecise else "")
                    print(
                        f"| {str(dt).replace('torch.', '')} | {path} | {k} | {float(err.max()):.3g} | "
                        f"{float(e32.max()):.3g} | {ratio:.3g} | {float((err / scale.clamp_min(1e-30)).max()):.3g} | "
                        f"{over} of {err.numel()} |"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
