"""Side-by-side timings of design variants behind the example versions (GPU only), so that each problem's
"plain" and "faster" versions are chosen from measurements, not guesses.

    python benchmarks/example_variants.py

Times with ktui's own timer (CUDA events, L2 flushed between calls, median over repetitions).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ktui.worker.timing import bench, measure_bandwidth


@triton.jit
def add_i32(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_i64(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


@triton.jit
def softmax_row(x_ptr, out_ptr, xs, os_, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * xs + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * os_ + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_3pass(x_ptr, out_ptr, xs, os_, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * xs + c + offs, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    mx = tl.max(m, axis=0)
    s = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * xs + c + offs, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - mx)
    total = tl.sum(s, axis=0)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * xs + c + offs, mask=c + offs < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(
            out_ptr + row * os_ + c + offs,
            (tl.exp(x - mx) / total).to(out_ptr.dtype.element_ty),
            mask=c + offs < n_cols,
        )


def main() -> None:
    bw = measure_bandwidth()
    print(f"device-to-device copy: {bw:.0f} GB/s")
    n = 1 << 28
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(a)
    ref = a + b
    print("\nvector add, 2^28 fp32 (12 bytes/element)")
    for kern, block, warps in [
        (add_i32, 128, 4),
        (add_i32, 256, 4),
        (add_i32, 512, 4),
        (add_i32, 1024, 4),
        (add_i32, 2048, 8),
        (add_i32, 4096, 8),
        (add_i64, 1024, 4),
        (add_i64, 2048, 8),
        (add_i64, 4096, 8),
        (add_i64, 8192, 16),
    ]:

        def fn():
            kern[(triton.cdiv(n, block),)](a, b, out, n, BLOCK=block, num_warps=warps)  # noqa: F821 - freed below

        fn()
        assert torch.equal(out, ref)
        med = bench(fn)[0]["median_us"]
        print(f"  {kern.__name__} BLOCK={block:5d} warps={warps:2d}: {med:8.1f} us {12 * n / med / 1e3:6.0f} GB/s")
    del a, b, out, ref
    for dtype in (torch.float32, torch.bfloat16):
        x = (3 * torch.randn(8192, 8192, device="cuda")).to(dtype)
        o = torch.empty_like(x)
        ref = torch.softmax(x.float(), -1).to(dtype)
        nbytes = 2 * x.numel() * x.element_size()
        print(f"\nsoftmax 8192x8192 {dtype}")
        variants = [
            (f"whole row, {w} warps", lambda w=w: softmax_row[(8192,)](x, o, 8192, 8192, 8192, BLOCK=8192, num_warps=w))
            for w in (4, 8, 16, 32)
        ]
        variants += [
            (
                f"3-pass chunks of {c}, {w} warps",
                lambda c=c, w=w: softmax_3pass[(8192,)](x, o, 8192, 8192, 8192, CHUNK=c, num_warps=w),
            )
            for c, w in ((1024, 4), (2048, 8))
        ]
        for name, fn in variants:
            fn()
            err = (o.float() - ref.float()).abs().max().item()
            med = bench(fn)[0]["median_us"]
            print(f"  {name:28s}: {med:8.1f} us {nbytes / med / 1e3:6.0f} GB/s  max err {err:.2e}")


if __name__ == "__main__":
    main()
