"""bf16 ``tl.sum`` and ``tl.cumsum`` on the device against the float64 truth, beside the same kernels on float32
values (red team round 21, F3): ktui's interpreter (``ktui.worker.interp_fixes._install_reduce_scan``) sums bf16 in
float32 and rounds once; the GPU rounds each combine step to bf16. This measures how far apart they land, per input
family: the data for deciding whether the CPU must round each step too.

    python3 benchmarks/bf16_reduce.py            # on the GPU (the h200.sh step bf16-reduce)
    TRITON_INTERPRET=1 python3 benchmarks/bf16_reduce.py   # the same under ktui's interpreter fixes, on the CPU

Prints one line per (family, op, precision): the max relative error and the fraction of elements off by more than
8 bf16 ulps (8 u |truth|, u = 2**-8: the off rule's bound)."""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

if os.environ.get("TRITON_INTERPRET") == "1":
    from ktui.worker import interp_fixes

    interp_fixes.install()
DEV = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"


@triton.jit
def cumsum_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr, F32: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=m, other=0.0)
    if F32:
        x = x.to(tl.float32)
    tl.store(out_ptr + row * n + offs, tl.cumsum(x, axis=0).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def sum_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr, F32: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    if F32:
        x = x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(x, axis=0).to(out_ptr.dtype.element_ty))


def main() -> None:
    rows, n = (64, 4096) if DEV == "cuda" else (4, 1024)
    print(f"device {DEV}, torch {torch.__version__}, triton {triton.__version__}, {rows} rows of {n}")
    torch.manual_seed(0)
    families = {
        "randn": torch.randn(rows, n),
        "uniform[0,1)": torch.rand(rows, n),
        "shifted +150": 150 + torch.randn(rows, n),
        "ones": torch.ones(rows, n),
    }
    print("| family | op | precision | max rel err | frac off > 8u |")
    print("| --- | --- | --- | --- | --- |")
    for name, x in families.items():
        xb = x.to(torch.bfloat16).to(DEV)
        truth_scan, truth_sum = xb.double().cumsum(-1), xb.double().sum(-1)
        for f32 in (False, True):
            what = "float32 carry" if f32 else "bf16"
            out = torch.empty_like(xb)
            cumsum_rows[(rows,)](xb, out, n, BLOCK=n, F32=f32, num_warps=4)
            s = torch.empty(rows, dtype=torch.bfloat16, device=DEV)
            sum_rows[(rows,)](xb, s, n, BLOCK=n, F32=f32, num_warps=4)
            for op, got, truth in (("cumsum", out, truth_scan), ("sum", s, truth_sum)):
                d = (got.double() - truth).abs()
                rel = (d / truth.abs().clamp_min(1e-30)).max().item()
                off = (d > 8 * 2.0**-8 * truth.abs()).double().mean().item()
                print(f"| {name} | {op} | {what} | {rel:.3g} | {off:.4f} |")


if __name__ == "__main__":
    main()
