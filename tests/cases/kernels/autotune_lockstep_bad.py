"""BAD (uncrossed): a split row sum in two autotuned kernels, each tuning its own split factor, where the second
assumes the first chose the same one. While every autotuned kernel launches config i together (configs pinned in
lockstep) the two agree and the sums are right; the autotuner tunes them apart, and so does ktui now: the second
kernel sums too few partial sums, or partial sums never written."""

import torch
import triton
import triton.language as tl

MAX_SPLIT = 4


@triton.autotune(configs=[triton.Config({"SPLIT": s}) for s in (1, 2, 4)], key=["n_cols"])
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


@triton.autotune(configs=[triton.Config({"PARTS": p}) for p in (1, 2, 4)], key=["rows"])
@triton.jit
def reduce_partials(part_ptr, out_ptr, rows, PARTS: tl.constexpr, MAX: tl.constexpr):
    row = tl.program_id(0)
    i = tl.arange(0, MAX)
    parts = tl.load(part_ptr + row * MAX + i, mask=i < PARTS, other=0.0)
    tl.store(out_ptr + row, tl.sum(parts, axis=0))


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    parts = torch.empty(rows, MAX_SPLIT, dtype=torch.float32, device=x.device)
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    partial_sums[lambda meta: (rows, meta["SPLIT"])](x, parts, cols, x.stride(0), BLOCK=1024, MAX=MAX_SPLIT)
    reduce_partials[(rows,)](parts, out, rows, MAX=MAX_SPLIT)
    return out
