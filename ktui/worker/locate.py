"""Where the bad elements of an output sit, in words a kernel author can act on: ``cols 128 entirely (of 7 x 129)``
points at a missed tail mask, ``rows 64 and cols 64 entirely`` at the last tile of a GEMM."""

from __future__ import annotations

import torch


def index_of(flat: int, shape: tuple[int, ...]) -> list[int]:
    """The index in ``shape`` of flat (row-major) position ``flat``: ``[2, 1]``; ``[]`` for a 0-D shape."""
    idx = []
    for s in reversed(shape):
        idx.append(flat % s if s else 0)
        flat = flat // s if s else 0
    return list(reversed(idx)) if shape else []


def ranges(xs: list[int], limit: int = 3) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0..2, 5, 7..8`` (at most ``limit`` ranges, then an ellipsis)."""
    out: list[str] = []
    start = prev = xs[0]
    for x in xs[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(str(start) if start == prev else f"{start}..{prev}")
        if x is not None:
            start = prev = x
    return ", ".join(out[:limit]) + (", ..." if len(out) > limit else "")


def where_bad(bad: torch.Tensor) -> str:
    """Where the bad elements of an output sit, over its last two dimensions: ``rows 64 and cols 64 entirely`` when
    they fill whole rows and columns (a missed tile row or column), else ``rows 0..6 of 7, cols 128 of 129``;
    ``indices 128 of 129`` for 1-D. '' when there are none, and for a single number (0-D)."""
    if not bool(bad.any()) or bad.ndim == 0:
        return ""
    if bad.ndim == 1:
        return f"indices {ranges(torch.nonzero(bad)[:, 0].tolist())} of {bad.shape[0]}"
    b2 = bad.reshape(-1, bad.shape[-2], bad.shape[-1]).any(dim=0)
    rows_n, cols_n = b2.shape
    full_rows = torch.nonzero(b2.all(dim=1))[:, 0].tolist()
    full_cols = torch.nonzero(b2.all(dim=0))[:, 0].tolist()
    covered = torch.zeros_like(b2)
    covered[full_rows, :] = True
    covered[:, full_cols] = True
    if (full_rows or full_cols) and bool((covered == b2).all()) and bool(b2.sum() < b2.numel()):
        parts = ([f"rows {ranges(full_rows)}"] if full_rows else []) + (
            [f"cols {ranges(full_cols)}"] if full_cols else []
        )
        return " and ".join(parts) + f" entirely (of {rows_n} x {cols_n})"
    r = torch.nonzero(b2.any(dim=1))[:, 0].tolist()
    c = torch.nonzero(b2.any(dim=0))[:, 0].tolist()
    return f"rows {ranges(r)} of {rows_n}, cols {ranges(c)} of {cols_n}"
