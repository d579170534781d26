"""Honest twin of autotune_lockstep_bad: the same split row sum, the second kernel's configs independent of the
first's: every partial sum it reads is written (zeros where the first kernel's split leaves slots unused). The
partials are reset to zero around the autotuner's benchmarks (``reset_to_zero``): a SPLIT=4 benchmark leaves its
four partials behind, and the real SPLIT=1 launch after it summed them again (3.3x the row sum on the H100,
2026-12-06, once ktui stopped restoring every argument after each benchmark, as Triton never does)."""

import torch
import triton
import triton.language as tl

MAX_SPLIT = 4


@triton.autotune(configs=[triton.Config({"SPLIT": s}) for s in (1, 2, 4)], key=["n_cols"], reset_to_zero=["part_ptr"])
@triton.jit
def partial_sums(x_ptr, part_ptr, n_cols, x_rs, SPLIT: tl.constexpr, BLOCK: tl.constexpr, MAX: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    chunk = tl.cdiv(n_cols, SPLIT)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, chunk, BLOCK):
        local = start + tl.arange(0, BLOCK)
        offs = part * chunk + local
        acc += tl.load(x_ptr + row * x_rs + offs, mask=(local < chunk) & (offs < n_cols), other=0.0)
    tl.store(part_ptr + row * MAX + part, tl.sum(acc, axis=0))


@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (1, 2, 4)], key=["rows"])
@triton.jit
def reduce_partials(part_ptr, out_ptr, rows, MAX: tl.constexpr):
    row = tl.program_id(0)
    parts = tl.load(part_ptr + row * MAX + tl.arange(0, MAX))
    tl.store(out_ptr + row, tl.sum(parts, axis=0))


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    parts = torch.zeros(rows, MAX_SPLIT, dtype=torch.float32, device=x.device)
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    partial_sums[lambda meta: (rows, meta["SPLIT"])](x, parts, cols, x.stride(0), BLOCK=1024, MAX=MAX_SPLIT)
    reduce_partials[(rows,)](parts, out, rows, MAX=MAX_SPLIT)
    return out
