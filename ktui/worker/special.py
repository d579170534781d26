"""Special-value input distributions, integer refills and near-duplicate inputs (cases.md special-values).

The ordinary distributions (``ktui.worker.cases``) draw finite, non-zero, moderate floats; these draw what they never
do, each from a generator seeded by the case:

- ``zeros``: N(0, 1) with exact zeros in a band of 128 rows (aligned to 128, so whole 64- and 128-row tiles of a
  matmul's output are zero; the last half of the rows when there are at most 128), in about a quarter of the
  64 x 64 tiles of the last two dimensions, and at 5% of the elements scattered (a 1-D tensor: a band of 1024
  aligned elements, or its last half, and the scattered zeros);
- ``masked``: 3 N(0, 1) where every row holds a chunk of ``-inf`` (a random run of the last dimension, never the
  whole row) and about a quarter of the rows (at least one of two or more) are entirely ``-1e9`` (both conventions
  of masked attention);
- ``large``: random signs, magnitudes 10**U(5.1, 15): past fp16's largest finite value (65504) for bf16, fp32 and
  fp64 inputs, small enough that products of two and sums of a million stay finite in fp32 (1e30 * 1e6 < 3.4e38);
  fp16 inputs get 10**U(2, 4.5) (up to its own range);
- ``extreme``: N(0, 1) with 0.5% of the elements at +-max/8 of the dtype and 5% subnormal (+-tiny * U(0.01, 1));
- ``nonfinite``: N(0, 1) with 1% ``+inf`` and 1% ``-inf`` at the same positions and signs in every tensor of the
  same shape (so ``a + b`` meets ``inf + inf``, not ``inf - inf``), and 1% NaN where the problem allows NaN results;
- ``intrange``: integer tensors refilled uniformly over their dtype's whole closed range, the minimum and the maximum
  each planted somewhere (``int_range``; floats left as generated), so an accumulator narrower than the reference's
  wraps, and so does one that overflows only at the dtype's edge.

A special distribution is offered only where the reference stays valid on it (``valid_reference``, tried once per
reference by the judge's ``describe``): the reference runs, gives no NaN (unless ``allow_nan``), and its native
precision computation stays finite wherever the float64 truth is finite. A case the trial let through whose own
reference turns out invalid is skipped by the judge, never failed.

Near-duplicates (``near_duplicate_``): the inputs of an earlier case with a few interior pairs of unequal elements
swapped, away from the first and last elements and from strided sample positions: same shape, same first/last
elements, the same strided samples and the same sum (the same multiset of values), a different interior. A memo
keyed on a few elements replays the earlier case's output and fails.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ktui.protocol.distributions import SPECIAL_DISTRIBUTIONS
from ktui.worker.tensors import flatten

SPECIAL = SPECIAL_DISTRIBUTIONS  # named on the wire (``ktui.protocol.distributions``), built here
FP16_MAX = 65504.0  # torch.finfo(torch.float16).max
SAMPLE_STRIDES = (2, 3, 4, 5, 6, 7, 8, 10, 16, 32, 64, 100, 128, 256, 1000, 1024)  # strided samples a memo may take
SWAPS = 4  # pairs of interior elements swapped in a near-duplicate


def _rows(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, cols) of a tensor seen as rows of its last dimension (a 1-D tensor is one row)."""
    cols = shape[-1] if shape else 1
    return (math.prod(shape[:-1]) if len(shape) > 1 else 1), cols


def _band(n: int, width: int, g: torch.Generator) -> tuple[int, int]:
    """A band of ``width`` aligned rows (elements) of ``n``, never all of them: ``n <= width`` gives its last half
    (none for ``n == 1``), so whole output tiles of 64 or 128 rows are zero without the tensor being all zero."""
    if n <= width:
        return (n + 1) // 2 if n > 1 else n, n
    b = int(torch.randint(0, (n + width - 1) // width, (1,), generator=g, device=g.device))
    return width * b, width * b + width


def int_range(dtype: torch.dtype, shape: tuple[int, ...], g: torch.Generator, device: torch.device) -> torch.Tensor:
    """Integers of ``dtype`` drawn uniformly over its whole closed range, ``iinfo.min`` to ``iinfo.max`` inclusive
    (``torch.randint``'s bound is exclusive: ``max`` itself was never drawn), with the minimum and the maximum each
    planted at a drawn position (two positions at least; one element gets one of them), so an accumulator or a
    ``+ 1`` that overflows at the dtype's edge meets it in every case. 64-bit dtypes are drawn as two 32-bit halves
    (no int64 holds ``max + 1``). A tensor of ``dtype`` on ``device``."""
    info = torch.iinfo(dtype)
    n = math.prod(shape)
    if info.bits == 64:  # the values' bit patterns in an int64 carrier, viewed as the dtype at the end
        hi = torch.randint(-(1 << 31), 1 << 31, shape, generator=g, device=device, dtype=torch.int64)
        lo = torch.randint(0, 1 << 32, shape, generator=g, device=device, dtype=torch.int64)
        carrier = (hi << 32) | lo  # every 64-bit pattern, uniformly
        edges = [info.min, info.max] if info.min < 0 else [0, -1]  # uint64's 0 and 2**64 - 1 as int64 patterns
    else:
        carrier = torch.randint(info.min, info.max + 1, shape, generator=g, device=device, dtype=torch.int64)
        edges = [info.min, info.max]
    if n:
        flat = carrier.reshape(-1)
        order = torch.randperm(n, generator=g, device=device)
        if n == 1:
            edges = [edges[int(torch.randint(0, 2, (1,), generator=g, device=device))]]
        flat[order[: len(edges)]] = torch.tensor(edges, dtype=torch.int64, device=device)
        carrier = flat.reshape(shape)
    return carrier.view(dtype) if info.bits == 64 else carrier.to(dtype)


def refill_special(t: torch.Tensor, dist: str, g: torch.Generator, allow_nan: bool, g_shared: torch.Generator) -> None:
    """Refill ``t`` in place for the special distribution ``dist`` (one of ``SPECIAL``). ``g`` is the tensor's own
    generator, ``g_shared`` one that is the same for every tensor of the case (positions of non-finite values).
    Integer tensors change only under ``intrange``; floats never do under it.

    Raises:
        ValueError: an unknown distribution.
    """
    shape, dev = tuple(t.shape), t.device
    n = t.numel()
    if n == 0 or t.dtype == torch.bool:
        return
    if dist == "intrange":
        if not t.is_floating_point() and not t.is_complex():
            t.copy_(int_range(t.dtype, shape, g, dev))
        return
    if not t.is_floating_point():
        return
    fin = torch.finfo(t.dtype)

    def u(*s: int, gen: torch.Generator = g) -> torch.Tensor:
        return torch.rand(s or shape, generator=gen, device=dev, dtype=torch.float32)

    vals = torch.randn(shape, generator=g, device=dev, dtype=torch.float64)
    if dist == "zeros":
        rows, cols = _rows(shape)
        v = vals.reshape(rows, cols) if len(shape) >= 2 else vals.reshape(1, -1)
        if len(shape) >= 2:
            r = shape[-2]
            b0, b1 = _band(r, 128, g)
            v.view(-1, r, cols)[:, b0:b1, :] = 0
            tr, tc = (r + 63) // 64, (cols + 63) // 64
            tiles = u(tr, tc) < 0.25
            for i, j in torch.nonzero(tiles).tolist():
                v.view(-1, r, cols)[:, 64 * i : 64 * i + 64, 64 * j : 64 * j + 64] = 0
        else:
            b0, b1 = _band(n, 1024, g)
            v[:, b0:b1] = 0
        vals = torch.where(u() < 0.05, torch.zeros_like(vals), v.reshape(shape))
    elif dist == "masked":
        rows, cols = _rows(shape)
        v = (3.0 * vals).reshape(rows, cols)
        if cols >= 2:
            start = (u(rows) * (cols - 1)).long()
            length = 1 + (u(rows) * (cols - 1 - start)).long()  # at least one, never the whole row
            idx = torch.arange(cols, device=dev).unsqueeze(0)
            chunk = (idx >= start.unsqueeze(1)) & (idx < (start + length).unsqueeze(1))
            v = v.masked_fill(chunk, -math.inf)
        whole = u(rows) < 0.25
        if rows >= 2 and not bool(whole.any()):
            whole[int(torch.randint(0, rows, (1,), generator=g, device=dev))] = True
        v = torch.where(whole.unsqueeze(1), torch.full_like(v, -1e9), v)
        vals = v.reshape(shape)
    elif dist == "large":
        lo, hi = (2.0, 4.5) if t.dtype == torch.float16 else (math.log10(FP16_MAX) + 0.3, 15.0)
        mag = 10.0 ** (lo + (hi - lo) * u().double())
        vals = torch.where(u() < 0.5, -mag, mag)
    elif dist == "extreme":
        pick = u()
        sign = torch.where(u() < 0.5, -1.0, 1.0).double()
        vals = torch.where(pick < 0.005, sign * fin.max / 8, vals)
        vals = torch.where((pick >= 0.005) & (pick < 0.055), sign * fin.tiny * (0.01 + 0.99 * u().double()), vals)
    elif dist == "nonfinite":
        pick = u(gen=g_shared)
        vals = torch.where(pick < 0.01, math.inf, torch.where(pick < 0.02, -math.inf, vals))
        if allow_nan:
            vals = torch.where((pick >= 0.02) & (pick < 0.03), math.nan, vals)
    else:
        raise ValueError(f"unknown special distribution {dist!r}; known: {', '.join(SPECIAL)}")
    t.copy_(vals.to(t.dtype))


def near_duplicate_(t: torch.Tensor, g: torch.Generator) -> None:
    """Swap up to ``SWAPS`` pairs of unequal interior elements of ``t`` (in place), at flat positions that are not
    the first or last element and not a multiple of any of ``SAMPLE_STRIDES`` nor of ``numel // k`` (k <= 64): the
    fingerprint a memo would take (first/last, strided samples, sum, min, max) is unchanged, the interior is not."""
    n = t.numel()
    if n < 4 or not t.is_contiguous():
        return
    flat = t.view(-1)
    strides = set(SAMPLE_STRIDES) | {max(n // k, 1) for k in range(1, 65)}
    cand = torch.randperm(n - 2, generator=g, device="cpu")[:4096] + 1
    ok = [p for p in cand.tolist() if all(p % s for s in strides if s > 1)]
    swapped = 0
    for a, b in zip(ok[0::2], ok[1::2]):
        va, vb = flat[a].clone(), flat[b].clone()
        if bool(va != vb):
            flat[a], flat[b] = vb, va
            swapped += 1
            if swapped >= SWAPS:
                break


def valid_reference(ref: Any, expected: Any, allow_nan: bool) -> str:
    """Why the reference's output on special values is not a valid target ('' when it is): a NaN in the float64
    output (unless ``allow_nan``), or the native-precision output (``expected``) non-finite where the float64 truth
    is finite, or the truth beyond the output dtype's range (an honest kernel in that precision overflows too)."""
    exp = dict(flatten(expected))
    for path, r in flatten(ref):
        r = torch.tensor(r, dtype=torch.float64) if isinstance(r, float) else r  # a Python float output too
        if not isinstance(r, torch.Tensor) or not r.is_floating_point():
            continue
        if not allow_nan and bool(torch.isnan(r).any()):
            return f"the reference gives NaN at {path or 'out'}"
        e = exp.get(path)
        e = torch.tensor(e, dtype=torch.float64) if isinstance(e, float) else e
        if isinstance(e, torch.Tensor) and e.is_floating_point() and e.shape == r.shape:
            fin = torch.isfinite(r.to(e.device))
            if bool((fin & ~torch.isfinite(e)).any()):
                return f"the reference in native precision overflows at {path or 'out'}"
            if bool((fin & (r.to(e.device).abs() > torch.finfo(e.dtype).max)).any()):
                return f"the reference's values exceed {e.dtype}'s range at {path or 'out'}"
    return ""
