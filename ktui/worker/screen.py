"""The screen of a verified stretch's calls: every call, not a sample, against the reference on its own inputs.

The verified stretch (``ktui.core.ladder.rungs.benchmark.verified_stretch``) makes 200 to 300 calls on one small
test spec and verifies ``timed.KEEP_STRETCH`` of them in full, chosen at random after each returned. A kernel wrong
on a few calls only (a host re-tuner that every 64th or 100th call returns a buffer half written: red team round 28,
#10 and round 29, #6) passed in most runs: 16 of ~250 calls meet 3 wrong ones in about one run of five. Every other
call is now screened: its copy (taken right after it returned, as a kept call's) against the reference, computed by
the judge on that call's inputs, by a bound loose enough that it only ranks (``score``), and the worst calls
(``SCREEN_FULL``), beyond the bound or not (red team round 30, #3: a call dropping each bf16 row's last column
stayed inside it), are verified in full as the kept ones are (``Judge.do_check_timed``). The screen decides
nothing itself: a call it flags passes or fails by the full verdict, so it cannot fail an honest kernel, and a
half-written output (NaN poison, stale values) is beyond any bound.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from ktui.protocol import TimedOutput
from ktui.worker.tensors import flatten, load_output

SCREEN_FULL = 8  # screened calls verified in full, the worst first
# The screen's bound per element: ULPS units of the output dtype's epsilon times |ref| + rms(ref), with a floor
# of TINY. Honest outputs sit far inside it (the full verdict allows a few ulp and 8x the native error); a call it
# flags is only verified in full.
ULPS = 64
TINY = 1e-30


def score(ref: Any, output: TimedOutput, folder: Path) -> float:
    """How far one call's output (``output``, its files under ``folder``) is from ``ref`` (the reference's output on
    that call's inputs), as a multiple of the screen's bound: the largest over the leaves of ``|got - ref|`` over
    ``ULPS * eps(dtype) * (|ref| + rms(ref)) + TINY`` for float tensors (inf where one side is NaN or inf and the
    other is not), ``1 + the fraction of elements differing`` for integer and bool tensors that differ anywhere
    (ties of an index output: the full verdict judges them), inf for a missing leaf, another shape or bytes not
    sent. Non-tensor leaves score 0 (the full verdict judges them)."""
    want = {p: t for p, t in flatten(ref) if isinstance(t, torch.Tensor)}
    got = {leaf["path"]: leaf for leaf in output["outputs"]}
    worst = 0.0
    for path, exp in want.items():
        leaf = got.get(path)
        if leaf is None or leaf.get("kind") != "tensor" or list(leaf.get("shape", [])) != list(exp.shape):
            return math.inf
        try:
            g = load_output(folder, leaf)
        except (ValueError, OSError, RuntimeError):
            return math.inf
        e = exp.detach().cpu()
        if e.is_floating_point() or e.is_complex():
            worst = max(worst, _float_score(g, e))
        elif e.numel():
            differ = (g.cpu().to(torch.int64) != e.to(torch.int64)).float().mean().item()
            worst = max(worst, 1.0 + differ if differ else 0.0)
    return worst


def _float_score(got: torch.Tensor, exp: torch.Tensor) -> float:
    if not exp.numel():
        return 0.0
    g = torch.view_as_real(got).double() if got.is_complex() else got.double()
    e = torch.view_as_real(exp).double() if exp.is_complex() else exp.double()
    both_nan = torch.isnan(g) & torch.isnan(e)
    same_inf = torch.isinf(e) & (g == e)
    finite = torch.isfinite(e) & torch.isfinite(g)
    if not bool((finite | both_nan | same_inf).all()):
        return math.inf
    dtype = got.real.dtype if got.is_complex() else got.dtype
    eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    rms = float(e[finite].pow(2).mean().sqrt()) if bool(finite.any()) else 0.0
    bound = ULPS * eps * (e.abs() + rms) + TINY
    err = torch.where(finite, (g - e).abs() / bound, torch.zeros_like(g))
    return float(err.max()) if err.numel() else 0.0
