"""Accuracy metrics of a candidate output against a reference output, and the verdict under a tolerance.

Every figure is computed in float64 (on the CPU; chunk by chunk on the judge's device for outputs over ``LARGE``
elements). Definitions (``d = out - ref`` elementwise, ``N`` elements):

- ``max_abs_err = max |d|``;  ``max_rel_err = max |d| / |ref|`` over elements where ``ref != 0``;
- ``mse = sum(d**2) / N``;  ``rmse = sqrt(mse)``;
- ``psnr_db = 10 log10(peak**2 / mse)`` with ``peak = max |ref|`` (the peak signal of the reference): the usual PSNR
  for data without a fixed range (Wikipedia, "Peak signal-to-noise ratio"); ``inf`` when ``mse == 0``;
- ``cosine = <out, ref> / (|out| |ref|)`` over the flattened tensors; 1 when both are zero vectors, 0 when exactly
  one is (a zero output never "matches" by yielding NaN);
- ``rel_l2_err = |d| / |ref|`` (L2 norms);
- low precision only: ``off_frac`` (the fraction of elements off by more than ``elem_ulps`` u |ref|), ``rel_l1_err``
  (``sum |d| / sum |ref|``) and ``gross_ratio`` (the largest ``|d|`` over its gross bound, ``min(gross_ulps u, 0.5)
  max(|ref|, rms(ref))``: above 1 fails; ``ktui.worker.tolerance``).

Where both tensors hold NaN, or the same infinity, the element counts as equal; a NaN or infinity in only one of
them makes ``d`` non-finite there and the max/mean figures NaN, so they cannot be skipped by a ``nan < tol`` test.

``error_metrics`` is the formulas' reference implementation. The verdict has one implementation: ``Sums``
(``ktui.worker.accumulator``) folds an output in chunk by chunk, ``_figures`` turns its sums into the figures above and
``_rules`` decides; ``verdict`` is its one-chunk case (the whole output in memory, so ``where`` can name rows and
columns), ``verdict_large`` its many-chunk case.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ktui.worker.accumulator import Sums, poisoned_chunk, to_float
from ktui.worker.locate import index_of, where_bad
from ktui.worker.tolerance import LEAN_MIN_ELEMENTS, LEAN_ULPS, Tolerance

FLUSHED = "are 0 where the reference is not"  # the zeros warning's words (``compare`` recognises it)


def _zeros_hint(largest_zeroed: float, peak: float) -> str:
    """What zeros where the reference is not suggest: small values flushed when every one of them is below
    2**-10 of the output's largest |ref| (``peak``); else not only small ones (new-user trial 20: "small values
    flushed?" for values up to 6e10)."""
    if largest_zeroed <= peak * 2.0**-10:
        return "small values flushed to zero?"
    return f"zeros where the reference reaches {largest_zeroed:.3g} (not only small values): never written, or zeroed?"


def psnr_db(mse: float, peak: float) -> float:
    """10 log10(peak**2 / mse): inf for an exact answer, -inf when the reference is zero or the error infinite,
    NaN when the error is."""
    if math.isnan(mse):
        return math.nan
    if mse == 0:
        return math.inf
    if peak == 0 or math.isinf(mse):
        return -math.inf
    return 10.0 * math.log10(peak * peak / mse)


def cosine_of(dot: float, norm_out: float, norm_ref: float) -> float:
    """<out, ref> / (|out| |ref|), with 1 for two zero vectors and 0 for exactly one (or an infinite norm): a zero
    output never "matches" by yielding NaN. NaN norms give NaN."""
    if math.isnan(norm_out) or math.isnan(norm_ref):
        return math.nan
    if norm_out == 0 and norm_ref == 0:
        return 1.0
    if norm_out == 0 or norm_ref == 0 or math.isinf(norm_out) or math.isinf(norm_ref):
        return 0.0
    return dot / (norm_out * norm_ref)


def scale_err(dot_or: float, rr: float) -> float:
    """``|<out, ref> / <ref, ref> - 1|``: how far the least-squares scale between output and reference is from 1.

    Cosine similarity cannot see a uniform scale error (``out = 1.03 * ref`` has cosine 1) and PSNR allows a few %
    of one at low precision; round-to-nearest output rounding leaves it near 0 (its errors are unbiased), and even
    truncation leaves it below half a unit of precision. 0 for an all-zero reference and output, inf when only the
    reference is all zero."""
    if rr > 0 and math.isfinite(rr):
        return abs(dot_or / rr - 1.0)
    return 0.0 if dot_or == 0 else math.inf


def error_metrics(out: torch.Tensor, ref: torch.Tensor) -> dict[str, Any]:
    """The metrics above for two tensors of the same shape (any float or integer dtype, CPU).

    Returns a dict of floats and ints: max_abs_err, max_rel_err, mse, rmse, psnr_db, cosine, rel_l2_err, scale_err
    (see ``scale_err``), nan_count,
    inf_count (in ``out``), ref_nan_count, nonfinite_mismatch (elements where exactly one side is NaN/inf or the
    infinities differ), worst_index (of the largest |d|; non-finite counts as largest), worst_got, worst_expected.

    Raises:
        ValueError: the shapes differ.
    """
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    n = out.numel()
    o = out.detach().to("cpu", torch.float64).reshape(-1)
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    if n == 0:
        return {
            "max_abs_err": 0.0,
            "max_rel_err": 0.0,
            "mse": 0.0,
            "rmse": 0.0,
            "psnr_db": math.inf,
            "cosine": 1.0,
            "rel_l2_err": 0.0,
            "scale_err": 0.0,
            "nan_count": 0,
            "inf_count": 0,
            "ref_nan_count": 0,
            "nonfinite_mismatch": 0,
            "worst_index": [],
            "worst_got": None,
            "worst_expected": None,
        }
    nan_o, nan_r = torch.isnan(o), torch.isnan(r)
    same = (nan_o & nan_r) | (torch.isinf(o) & torch.isinf(r) & (torch.sign(o) == torch.sign(r)))
    d = torch.where(same, torch.zeros_like(o), o - r)
    ad = d.abs()
    nonfinite = ~torch.isfinite(ad)
    oc = torch.where(same, torch.zeros_like(o), o)
    rc = torch.where(same, torch.zeros_like(r), r)

    max_abs = to_float(ad.max())
    ar = r.abs()
    nz = (ar > 0) & torch.isfinite(ar)
    if bool(nz.any()):
        max_rel = to_float((ad[nz] / ar[nz]).max())
        if bool(nonfinite[~nz].any()):
            max_rel = math.nan
    else:
        max_rel = 0.0 if max_abs == 0 else (math.nan if math.isnan(max_abs) else math.inf)
    mse = to_float((d * d).mean())
    finite_r = r[torch.isfinite(r)]
    peak = to_float(finite_r.abs().max()) if finite_r.numel() else 0.0
    psnr = psnr_db(mse, peak)
    no, nr = to_float(torch.linalg.vector_norm(oc)), to_float(torch.linalg.vector_norm(rc))
    cosine = cosine_of(to_float(torch.dot(oc, rc)), no, nr)
    nd = to_float(torch.linalg.vector_norm(d))
    rel_l2 = (nd / nr) if nr > 0 else (0.0 if nd == 0 else math.inf)
    scale = scale_err(to_float(torch.dot(oc, rc)), nr * nr)

    badness = torch.where(nonfinite, torch.full_like(ad, math.inf), ad)
    wi = int(torch.argmax(badness).item())
    return {
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "mse": mse,
        "rmse": math.sqrt(mse) if mse >= 0 else math.nan,
        "psnr_db": psnr,
        "cosine": cosine,
        "rel_l2_err": rel_l2,
        "scale_err": scale,
        "nan_count": int(nan_o.sum()),
        "inf_count": int(torch.isinf(o).sum()),
        "ref_nan_count": int(nan_r.sum()),
        "nonfinite_mismatch": int(nonfinite.sum()),
        "worst_index": index_of(wi, tuple(out.shape)),
        "worst_got": to_float(o[wi]),
        "worst_expected": to_float(r[wi]),
    }


LARGE = 1 << 26  # outputs with more elements than this are judged in chunks (memory stays bounded)


def verdict(
    out: torch.Tensor,
    ref: torch.Tensor,
    tol: Tolerance,
    unwritten: torch.Tensor | None = None,
    allow_nan: bool = False,
    gross_slack: torch.Tensor | None = None,
    elem_slack: torch.Tensor | None = None,
) -> dict[str, Any]:
    """``error_metrics`` plus the verdict under ``tol``: ``ok``, ``reason`` (one line, '' when ok), ``score`` (the
    largest ratio of an error to its allowance: <= 1 passes; used to name the worst spec), ``outside_tol`` (elements
    failing the elementwise test, allclose and exact modes), ``unwritten`` (elements still holding ktui's poison
    pattern), ``where`` (the rows/cols of the bad elements) and ``warnings`` (a tolerance larger than the output's
    scale, small values flushed to zero).

    ``unwritten`` is a boolean mask of ``out``'s shape, or None when nothing was poisoned; ``gross_slack`` a flat
    float64 tensor added to low precision's gross bound element by element (where the truth is ill-conditioned:
    ``ktui.worker.conditioning``; ``gross_slacked`` counts the elements past the plain bounds it let through) and
    ``elem_slack`` likewise to the off and firm bounds, whose errors the L1 error counts only beyond it. A NaN
    in the reference fails as "reference invalid" unless ``allow_nan`` (the problem declares NaN a valid result).
    This is the one-chunk case of ``verdict_large``: the same accumulator and rules, with the whole output in
    memory.

    Raises:
        ValueError: the shapes differ.
    """
    mask = unwritten.reshape(-1) if unwritten is not None else None
    return _judge(
        out,
        ref,
        tol,
        allow_nan,
        "cpu",
        max(out.numel(), 1),
        lambda s, e, raw: mask[s:e] if mask is not None else None,
        gross_slack,
        elem_slack,
    )


def verdict_large(
    out: torch.Tensor,
    ref: torch.Tensor,
    tol: Tolerance,
    allow_nan: bool = False,
    device: str = "cpu",
    chunk: int = 1 << 24,
    gross_slack: torch.Tensor | None = None,
    native: torch.Tensor | None = None,
    elem_slack: torch.Tensor | None = None,
) -> dict[str, Any]:
    """``verdict`` for outputs too large to hold several float64 copies of (more than 2**26 elements, e.g. the
    >2**31-element tensors of cases.md int32-overflow): the same figures and rules, accumulated over chunks of
    ``chunk`` elements on ``device``; unwritten elements are found from the poison pattern chunk by chunk (less,
    for an integer output, those equal to ``native``, the reference computed in its own precision, of ``out``'s
    shape, as ``compare.unwritten_mask`` leaves them out of ``verdict``: an int8 quantizer rightly gives 90, the
    poison byte, where the native computation does), and ``where`` gives the flat index range of the bad elements
    (``chunked``: True).

    Raises:
        ValueError: the shapes differ.
    """
    nf = None
    if native is not None and tuple(native.shape) == tuple(out.shape) and not out.is_floating_point():
        nf = native.detach().reshape(-1)

    def unwritten_of(s: int, e: int, raw: torch.Tensor) -> torch.Tensor:
        mask = poisoned_chunk(raw)
        if nf is not None and bool(mask.any()):
            mask &= ~(raw.cpu() == nf[s:e].to("cpu", raw.dtype))
        return mask

    m = _judge(out, ref, tol, allow_nan, device, chunk, unwritten_of, gross_slack, elem_slack)
    m["chunked"] = True
    return m


def _judge(
    out: torch.Tensor,
    ref: torch.Tensor,
    tol: Tolerance,
    allow_nan: bool,
    device: str,
    chunk: int,
    unwritten_of: Callable[[int, int, torch.Tensor], torch.Tensor | None],
    gross_slack: torch.Tensor | None = None,
    elem_slack: torch.Tensor | None = None,
) -> dict[str, Any]:
    """The verdict's one implementation: ``Sums`` over chunks of ``chunk`` elements, then the figures and rules."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    shape = tuple(out.shape)
    of, rf = out.detach().reshape(-1), ref.detach().reshape(-1)
    n = of.numel()
    tiny = torch.finfo(out.dtype).tiny if out.is_floating_point() else 0.0
    rms = _rms_finite(rf, device, chunk) if tol.bounds_gross else 0.0
    # the off rule's floor where the truth is 0: float32's resolution of the output's typical magnitude
    typical = _median_abs(rf) if tol.mode == "psnr" and tol.unit_roundoff > 0 else 0.0
    slack = gross_slack.reshape(-1) if gross_slack is not None else None
    elem = elem_slack.reshape(-1) if elem_slack is not None else None
    acc = Sums(tol, tiny, keep_mask=n <= chunk, rms_ref=rms, gross_slack=slack, typical_ref=typical, elem_slack=elem)
    for s in range(0, n, chunk):
        raw = of[s : s + chunk]
        acc.add(
            s,
            raw.to(device=device, dtype=torch.float64),
            rf[s : s + chunk].to(device=device, dtype=torch.float64),
            unwritten_of(s, s + raw.numel(), raw),
        )
    m = _figures(acc, n, shape, of, rf)
    return _rules(m, acc, tol, allow_nan, n, shape, of, rf)


MEDIAN_SAMPLE = 1 << 20  # at most this many elements (evenly strided) set the median of |ref|


def _median_abs(rf: torch.Tensor) -> float:
    """The median of |ref| over the finite elements of the flat reference ``rf`` (over at most ``MEDIAN_SAMPLE`` of
    them, evenly strided, on the CPU); 0 when it has none. A magnitude the few huge elements of the ``extreme``
    family cannot move (their RMS can: red team round 17b)."""
    step = max(1, rf.numel() // MEDIAN_SAMPLE)
    r = rf[::step].detach().to("cpu", torch.float64).abs()
    r = r[torch.isfinite(r)]
    return to_float(r.median()) if r.numel() else 0.0


def _rms_finite(rf: torch.Tensor, device: str, chunk: int) -> float:
    """The root mean square of the finite elements of the flat reference ``rf`` (float64, chunk by chunk on
    ``device``); 0 when it has none: the floor of low precision's gross bound (``Tolerance.gross_allowance``)."""
    sq, count = 0.0, 0
    for s in range(0, rf.numel(), chunk):
        r = rf[s : s + chunk].to(device=device, dtype=torch.float64)
        fin = torch.isfinite(r)
        sq += to_float(torch.where(fin, r * r, torch.zeros_like(r)).sum())
        count += int(fin.sum())
    return math.sqrt(sq / count) if count else 0.0


def _figures(a: Sums, n: int, shape: tuple[int, ...], of: torch.Tensor, rf: torch.Tensor) -> dict[str, Any]:
    """The ``error_metrics`` figures from the sums (the same definitions)."""
    if n == 0:
        return error_metrics(of, rf)
    max_abs = math.nan if a.nan_d else a.max_bad
    if a.any_nz:
        max_rel = math.nan if a.nonfinite_at_zero else a.rel
    else:
        max_rel = 0.0 if max_abs == 0 else (math.nan if math.isnan(max_abs) else math.inf)
    mse = a.sq / n
    nr, nd = math.sqrt(a.nr2), math.sqrt(a.sq)
    # the figures leave unwritten elements out (the reference's value stands in), but the worst element is the
    # first unwritten one: it is what fails, and what the message names ("unwritten at [128]")
    wi = a.first_unwritten if a.first_unwritten is not None else a.max_bad_i
    return {
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "mse": mse,
        "rmse": math.sqrt(mse) if mse >= 0 else math.nan,
        "psnr_db": psnr_db(mse, a.peak),
        "cosine": cosine_of(a.dot, math.sqrt(a.no2), nr),
        "rel_l2_err": (nd / nr) if nr > 0 else (0.0 if nd == 0 else math.inf),
        "scale_err": scale_err(a.dot, a.nr2),
        "nan_count": a.nan_o,
        "inf_count": a.inf_o,
        "ref_nan_count": a.nan_r,
        "nonfinite_mismatch": a.nonfinite,
        "worst_index": index_of(wi, shape),
        "worst_got": to_float(of[wi]),
        "worst_expected": to_float(rf[wi]),
        # low precision, elementwise (``tolerance``): the fraction of elements off by > elem_ulps u |ref|, L1 error
        "off_frac": a.off / n,
        "rel_l1_err": (a.l1 / a.l1_ref) if a.l1_ref > 0 else (0.0 if a.l1 == 0 else math.inf),
        # and the largest error against the gross bound (``Tolerance.gross_allowance``: above 1 fails)
        **({"gross_ratio": a.gross_ratio} if a.tol.bounds_gross else {}),
        # and the fraction off by more than elem_ulps u max(|ref|, rms(ref)) (``Tolerance.firm_allowance``)
        **({"firm_frac": a.firm / n} if a.tol.bounds_gross else {}),
        **({"gross_slacked": a.slacked} if a.gross_slack is not None or a.elem_slack is not None else {}),
    }


def _rules(
    m: dict[str, Any],
    a: Sums,
    tol: Tolerance,
    allow_nan: bool,
    n: int,
    shape: tuple[int, ...],
    of: torch.Tensor,
    rf: torch.Tensor,
) -> dict[str, Any]:
    """The verdict's rules on the figures: ``m`` gains warnings, unwritten, outside_tol, where, ok, reason, score."""
    reasons: list[str] = []
    m["warnings"] = warnings = []
    m["unwritten"] = a.unwritten
    if m["ref_nan_count"] and not allow_nan:
        reasons.append(
            f"reference invalid: {m['ref_nan_count']} NaN in the reference output (set allow_nan = True "
            f"in the reference if NaN is a valid result)"
        )
    if a.unwritten:
        reasons.append(
            f"{a.unwritten} element{'s' * (a.unwritten != 1)} unwritten at {index_of(a.first_unwritten or 0, shape)}"
        )
    elif a.nonfinite:
        # the values at the first (new-user trial 35, F8: a log-sum-exp giving NaN on a row holding +inf, where
        # torch gives inf, read "2 NaN/inf where the reference differs" with no value)
        i = a.first_nonfinite or 0
        got, want = (float(of[i]), float(rf[i])) if 0 <= i < of.numel() else (math.nan, math.nan)
        # a NaN where the truth is finite: what a read of scratch no program wrote gives under ktui, whose poison
        # fills the call's torch.empty memory with NaN (new-user trial 35, F14: a combine pass reading partials of
        # splits never launched read "1 NaN/inf where the reference differs" and nothing more)
        scratch = (
            " (NaN where the reference is finite: memory the call allocates with torch.empty* holds NaN under ktui, "
            "so a read of scratch no program wrote gives NaN; so do 0/0, inf - inf and an exp that overflows)"
            if math.isnan(got) and math.isfinite(want)
            else ""
        )
        reasons.append(
            f"{a.nonfinite} NaN/inf where the reference differs (NaN positions must match the "
            f"reference's), first at {index_of(i, shape)}: got {got:g}, expected {want:g}{scratch}"
        )
    m["outside_tol"] = a.outside if tol.mode != "psnr" else 0
    psnr, cos, rel_l2 = m["psnr_db"], m["cosine"], m["rel_l2_err"]
    if tol.mode == "exact":
        if a.outside and not reasons:
            reasons.append(
                f"{a.outside} of {n} elements differ (exact compare), worst at {m['worst_index']}: "
                f"got {m['worst_got']:g}, expected {m['worst_expected']:g}"
            )
        score = math.inf if a.outside else 0.0
    elif tol.mode == "allclose":
        if 0 < a.peak <= tol.atol:
            warnings.append(
                f"atol={tol.atol:g} is larger than the output's scale (max |ref| = {a.peak:.3g}): "
                f"any answer near zero passes the elementwise test; rel_l2_err={rel_l2:.3g}"
            )
        score = a.ratio
        versus = tol.native_comparison(m["max_abs_err"])  # against the reference computed natively (honest-fp32)
        bound = tol.rel_l2_bound
        # (not against a truth that is 0 everywhere: nothing is relative to it, and the elements decide; a float64
        # GELU is 0 below x = -8.3 where an honest erfc gives 3e-19 on a 1-element output)
        if math.isfinite(bound) and a.nr2 > 0 and rel_l2 > bound and not a.outside and not reasons:
            m["whole_only"] = True  # ktui's own rule, not the tolerance's elements (``compare.native_fails_too``)
            reasons.append(
                f"rel_l2_err {rel_l2:.3g} > {bound:.3g}: the output is wrong as a whole "
                f"although every element is within {tol.describe()}" + (f"; {versus}" if versus else "")
            )
            score = math.inf
        if a.outside and not reasons:
            wi = a.ratio_i
            reasons.append(
                f"{a.outside} of {n} elements outside {tol.describe()}, worst at {index_of(wi, shape)}: "
                f"got {to_float(of[wi]):.6g}, expected {to_float(rf[wi]):.6g}" + (f"; {versus}" if versus else "")
            )
        if tol.native_warning(a.peak):
            warnings.append(tol.native_warning(a.peak))
    else:  # psnr
        if a.flushed and a.flushed >= 0.01 * n:
            warnings.append(
                f"{a.flushed} of {n} elements {FLUSHED} (up to |ref| = {a.flushed_max:.3g}): "
                + _zeros_hint(a.flushed_max, a.peak)
                + " PSNR and cosine cannot see them"
            )
        if math.isnan(psnr) or math.isnan(cos):
            score = math.inf
        else:
            s1 = 0.0 if psnr == math.inf else 10 ** ((tol.min_psnr_db - psnr) / 20.0)
            score = max(s1, (1.0 - cos) / max(1.0 - tol.min_cosine, 1e-300))
        if not reasons:
            if not (psnr >= tol.min_psnr_db):
                reasons.append(f"psnr_db {psnr:.1f} < {tol.min_psnr_db:g}")
            if not (cos >= tol.min_cosine):
                reasons.append(f"cosine {cos:.6f} < {tol.min_cosine:g}")
            if math.isfinite(tol.max_rel_l2) and not (rel_l2 <= tol.max_rel_l2):
                reasons.append(f"rel_l2_err {rel_l2:.3g} > {tol.max_rel_l2:g}")
    if math.isfinite(tol.max_scale_err) and not (m["scale_err"] <= tol.max_scale_err) and not reasons:
        reasons.append(
            f"scale_err {m['scale_err']:.3g} > {tol.max_scale_err:g}: the output is off from the "
            "reference by an overall factor (a wrong constant or normalization, which cosine similarity "
            "cannot see, or accumulated error)"
        )
        score = max(score, m["scale_err"] / tol.max_scale_err)
    if tol.mode == "psnr":  # after the scale check: an overall factor is named as one, not as elements off
        score = max(score, _elementwise(m, a, tol, n, shape, of, rf, reasons))
    m["where"] = _where(a, n, shape) if reasons else ""
    if reasons and m["where"]:
        reasons[0] += f" (bad elements in {m['where']})"
    if reasons:
        score = math.inf if not math.isfinite(score) or score <= 1 else score
    m["ok"] = not reasons
    m["reason"] = "; ".join(reasons)
    m["score"] = score
    return m


def _elementwise(
    m: dict[str, Any],
    a: Sums,
    tol: Tolerance,
    n: int,
    shape: tuple[int, ...],
    of: torch.Tensor,
    rf: torch.Tensor,
    reasons: list[str],
) -> float:
    """Low precision's elementwise rules (``tolerance``: no element grossly off, ``Tolerance.gross_allowance``; at
    most ``max_off_frac`` of the elements off by more than ``elem_ulps`` u |ref|; L1 relative error at most
    ``max_rel_l1``): appends a reason when one fails and none came before; returns the score of the three (their
    ratios to the bounds)."""
    if tol.unit_roundoff <= 0 or n == 0:
        return 0.0
    frac, l1 = m["off_frac"], m["rel_l1_err"]
    firm = float(m.get("firm_frac", 0.0))
    score = max(
        frac / tol.max_off_frac if tol.max_off_frac > 0 else 0.0,
        firm / tol.max_firm_frac if 0 < tol.max_firm_frac < math.inf else 0.0,
        l1 / tol.max_rel_l1 if tol.max_rel_l1 else 0.0,
        float(m.get("gross_ratio", 0.0)),
    )
    if reasons:  # PSNR or cosine failed already: where, as an allclose failure says (new-user trial 29, F21)
        for count, first, mask, last, what in (
            (a.gross, a.first_gross, a.gross_mask, a.last_gross, "grossly wrong"),
            (a.off, a.first_off, a.off_mask, a.last_off, f"off by more than {tol.elem_ulps:g} u |ref|"),
        ):
            if count and first is not None:
                reasons[0] += (
                    f"; {count} of {n} elements {what}, first at {index_of(first, shape)}: got "
                    f"{to_float(of[first]):.6g}, expected {to_float(rf[first]):.6g}"
                )
                if a.first_bad is None:
                    a.bad_mask, a.first_bad, a.last_bad = mask, first, last
                break
        return score
    if a.gross:
        i = a.first_gross or 0
        reasons.append(
            f"{a.gross} of {n} element{'s' * (a.gross != 1)} grossly wrong: off by more than "
            f"{tol.gross_factor:.3g} x max(|ref|, rms(ref)) ({tol.gross_ulps:g} u, u = {tol.unit_roundoff:.3g}; "
            f"rms(ref) = {a.rms_ref:.3g}), first at {index_of(i, shape)}: got {to_float(of[i]):.6g}, expected "
            f"{to_float(rf[i]):.6g} (a few elements zeroed, dropped or of the wrong sign: PSNR, cosine and the "
            f"{tol.max_off_frac:.0%} allowance cannot see them)"
        )
        if a.first_bad is None:  # name where the grossly wrong elements sit
            a.bad_mask, a.first_bad, a.last_bad = a.gross_mask, a.first_gross, a.last_gross
        return score
    if frac > tol.max_off_frac:
        i = a.first_off or 0
        reasons.append(
            f"{a.off} of {n} elements ({frac:.1%}) off by more than {tol.elem_ulps:g} u |ref| "
            f"(u = {tol.unit_roundoff:.3g}: 4-8 ulp), more than the {tol.max_off_frac:.0%} allowed; first at "
            f"{index_of(i, shape)}: got {to_float(of[i]):.6g}, expected {to_float(rf[i]):.6g} ("
            + (_zeros_hint(a.flushed_max, a.peak) + " " if to_float(of[i]) == 0 else "")
            + "PSNR and cosine cannot see them)"
        )
        if a.first_bad is None:  # name where the off elements sit
            a.bad_mask, a.first_bad, a.last_bad = a.off_mask, a.first_off, a.last_off
    if firm > tol.max_firm_frac and not reasons:  # after the off rule: a flush reads as one
        i = a.first_firm or 0
        reasons.append(
            f"{a.firm} of {n} elements ({firm:.2%}) off by more than {tol.firm_factor:.3g} x max(|ref|, rms(ref)) "
            f"({tol.elem_ulps:g} u, u = {tol.unit_roundoff:.3g}; rms(ref) = {a.rms_ref:.3g}), more than the "
            f"{tol.max_firm_frac * 100:.3g}% allowed: no cancellation explains an error at the scale of rms(ref); "
            f"first at {index_of(i, shape)}: got {to_float(of[i]):.6g}, expected {to_float(rf[i]):.6g} (a regular part "
            "of the output computed in lower precision? the 1% allowance, PSNR and cosine cannot see it)"
        )
        if a.first_bad is None:
            a.bad_mask, a.first_bad, a.last_bad = a.firm_mask, a.first_firm, a.last_firm
        return score
    if l1 > tol.max_rel_l1:
        reasons.append(
            f"rel_l1_err {l1:.3g} > {tol.max_rel_l1:.3g} (4u): the output has lost or gained that fraction of its mass"
        )
        return score
    lean = rounding_lean(a)
    if lean is not None:
        way, share, mean_ulps = lean
        if share > tol.max_one_way and mean_ulps >= LEAN_ULPS:
            reasons.append(
                f"{share:.1%} of the {a.erring} elements that differ from the reference err {way}, by "
                f"{mean_ulps:.2f} ulp on average (round to nearest errs either way about equally; at most "
                f"{tol.max_one_way:.0%} one way with a mean of {LEAN_ULPS:g} ulp): "
                + (
                    "a conversion to the output dtype that truncates (the high bits of a float32 kept, "
                    "rounding='rtz') instead of rounding to nearest even? A sum of this output is biased by about "
                    f"{mean_ulps * tol.unit_roundoff:.2g} of its size"
                    if way == "toward zero"
                    else "a conversion that rounds one way (down, up or away from zero) instead of to nearest even, "
                    "or a constant rounded to the output dtype? A sum of this output is biased"
                )
            )
            score = max(score, share / tol.max_one_way)
    return score


def rounding_lean(a: Sums) -> tuple[str, float, float] | None:
    """Which way an output's erring elements lean most: ``(way, share, mean_ulps)`` with ``way`` one of "toward
    zero", "away from zero", "down", "up", ``share`` the fraction of the erring elements (where the truth is finite
    and at least ``tiny``) that err that way and ``mean_ulps`` their mean error that way over all erring elements, in
    ulps of the output dtype at the truth (``Sums._lean``). None below ``LEAN_MIN_ELEMENTS`` erring elements (the
    rule and its derivation: ``ktui.worker.tolerance``)."""
    n = a.erring
    if n < LEAN_MIN_ELEMENTS:
        return None
    ways = [
        ("toward zero", a.toward, a.toward_ulps),
        ("away from zero", a.away, -a.toward_ulps),
        ("down", a.down, a.down_ulps),
        ("up", a.up, -a.down_ulps),
    ]
    way, count, total = max(ways, key=lambda w: (w[1], w[2]))
    return way, count / n, total / n


def _where(a: Sums, n: int, shape: tuple[int, ...]) -> str:
    """Rows and columns of the bad elements when the whole mask was held (``where_bad``), else their flat range."""
    if a.bad_mask is not None:
        return where_bad(a.bad_mask.cpu().reshape(shape))
    return f"flat indices {a.first_bad}..{a.last_bad} of {n}" if a.first_bad is not None else ""
