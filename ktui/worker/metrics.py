"""Accuracy metrics of a candidate output against a reference output, and the verdict under a tolerance.

Every figure is computed in float64 on the CPU. Definitions (``d = out - ref`` elementwise, ``N`` elements):

- ``max_abs_err = max |d|``;  ``max_rel_err = max |d| / |ref|`` over elements where ``ref != 0``;
- ``mse = sum(d**2) / N``;  ``rmse = sqrt(mse)``;
- ``psnr_db = 10 log10(peak**2 / mse)`` with ``peak = max |ref|`` (the peak signal of the reference): the usual PSNR
  for data without a fixed range (Wikipedia, "Peak signal-to-noise ratio"); ``inf`` when ``mse == 0``;
- ``cosine = <out, ref> / (|out| |ref|)`` over the flattened tensors; 1 when both are zero vectors, 0 when exactly
  one is (a zero output never "matches" by yielding NaN);
- ``rel_l2_err = |d| / |ref|`` (L2 norms).

Where both tensors hold NaN, or the same infinity, the element counts as equal; a NaN or infinity in only one of
them makes ``d`` non-finite there and the max/mean figures NaN, so they cannot be skipped by a ``nan < tol`` test.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ktui.worker.tolerance import Tolerance


def _f(x: torch.Tensor | float) -> float:
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


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


def _index(flat: int, shape: tuple[int, ...]) -> list[int]:
    idx = []
    for s in reversed(shape):
        idx.append(flat % s if s else 0)
        flat = flat // s if s else 0
    return list(reversed(idx)) if shape else []


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
        return {"max_abs_err": 0.0, "max_rel_err": 0.0, "mse": 0.0, "rmse": 0.0, "psnr_db": math.inf, "cosine": 1.0,
                "rel_l2_err": 0.0, "scale_err": 0.0, "nan_count": 0, "inf_count": 0, "ref_nan_count": 0,
                "nonfinite_mismatch": 0, "worst_index": [], "worst_got": None, "worst_expected": None}
    nan_o, nan_r = torch.isnan(o), torch.isnan(r)
    same = (nan_o & nan_r) | (torch.isinf(o) & torch.isinf(r) & (torch.sign(o) == torch.sign(r)))
    d = torch.where(same, torch.zeros_like(o), o - r)
    ad = d.abs()
    nonfinite = ~torch.isfinite(ad)
    oc = torch.where(same, torch.zeros_like(o), o)
    rc = torch.where(same, torch.zeros_like(r), r)

    max_abs = _f(ad.max())
    ar = r.abs()
    nz = (ar > 0) & torch.isfinite(ar)
    if bool(nz.any()):
        max_rel = _f((ad[nz] / ar[nz]).max())
        if bool(nonfinite[~nz].any()):
            max_rel = math.nan
    else:
        max_rel = 0.0 if max_abs == 0 else (math.nan if math.isnan(max_abs) else math.inf)
    mse = _f((d * d).mean())
    finite_r = r[torch.isfinite(r)]
    peak = _f(finite_r.abs().max()) if finite_r.numel() else 0.0
    psnr = psnr_db(mse, peak)
    no, nr = _f(torch.linalg.vector_norm(oc)), _f(torch.linalg.vector_norm(rc))
    cosine = cosine_of(_f(torch.dot(oc, rc)), no, nr)
    nd = _f(torch.linalg.vector_norm(d))
    rel_l2 = (nd / nr) if nr > 0 else (0.0 if nd == 0 else math.inf)
    scale = scale_err(_f(torch.dot(oc, rc)), nr * nr)

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
        "worst_index": _index(wi, tuple(out.shape)),
        "worst_got": _f(o[wi]),
        "worst_expected": _f(r[wi]),
    }


def _ranges(xs: list[int], limit: int = 3) -> str:
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
    ``indices 128 of 129`` for 1-D. '' when there are none."""
    if not bool(bad.any()):
        return ""
    if bad.ndim == 1:
        return f"indices {_ranges(torch.nonzero(bad)[:, 0].tolist())} of {bad.shape[0]}"
    b2 = bad.reshape(-1, bad.shape[-2], bad.shape[-1]).any(dim=0)
    rows_n, cols_n = b2.shape
    full_rows = torch.nonzero(b2.all(dim=1))[:, 0].tolist()
    full_cols = torch.nonzero(b2.all(dim=0))[:, 0].tolist()
    covered = torch.zeros_like(b2)
    covered[full_rows, :] = True
    covered[:, full_cols] = True
    if (full_rows or full_cols) and bool((covered == b2).all()) and bool(b2.sum() < b2.numel()):
        parts = ([f"rows {_ranges(full_rows)}"] if full_rows else []) + \
                ([f"cols {_ranges(full_cols)}"] if full_cols else [])
        return " and ".join(parts) + f" entirely (of {rows_n} x {cols_n})"
    r = torch.nonzero(b2.any(dim=1))[:, 0].tolist()
    c = torch.nonzero(b2.any(dim=0))[:, 0].tolist()
    return f"rows {_ranges(r)} of {rows_n}, cols {_ranges(c)} of {cols_n}"


def verdict(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, unwritten: torch.Tensor | None = None,
            allow_nan: bool = False) -> dict[str, Any]:
    """``error_metrics`` plus the verdict under ``tol``: ``ok``, ``reason`` (one line, '' when ok), ``score`` (the
    largest ratio of an error to its allowance: <= 1 passes; used to name the worst spec), ``outside_tol`` (elements
    failing the elementwise test, allclose mode), ``unwritten`` (elements still holding ktui's poison pattern),
    ``where`` (the rows/cols of the bad elements) and ``warnings`` (a tolerance larger than the output's scale).

    ``unwritten`` is a boolean mask of ``out``'s shape, or None when nothing was poisoned. A NaN in the reference
    fails as "reference invalid" unless ``allow_nan`` (the problem declares NaN a valid result).
    """
    m = error_metrics(out, ref)
    shape = tuple(out.shape)
    reasons: list[str] = []
    m["warnings"] = []
    if m["ref_nan_count"] and not allow_nan:
        reasons.append(f"reference invalid: {m['ref_nan_count']} NaN in the reference output (set allow_nan = True "
                       f"in the reference if NaN is a valid result)")
    bad_mask = torch.zeros(shape, dtype=torch.bool)
    n_unwritten = int(unwritten.sum()) if unwritten is not None else 0
    m["unwritten"] = n_unwritten
    if n_unwritten:
        first = _index(int(torch.nonzero(unwritten.reshape(-1))[0]), shape)
        reasons.append(f"{n_unwritten} element{'s' * (n_unwritten != 1)} unwritten at {first}")
        bad_mask |= unwritten.reshape(shape)

    o = out.detach().to("cpu", torch.float64).reshape(-1)
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    nonfinite = ~torch.isfinite((o - r).abs()) & ~(torch.isnan(o) & torch.isnan(r))
    if m["nonfinite_mismatch"]:
        bad_mask |= nonfinite.reshape(shape) & ~(torch.isinf(o) & torch.isinf(r) & (o == r)).reshape(shape)
    if m["nonfinite_mismatch"] and not n_unwritten:
        first = _index(int(torch.nonzero(nonfinite)[0]), shape) if bool(nonfinite.any()) else m["worst_index"]
        reasons.append(f"{m['nonfinite_mismatch']} NaN/inf where the reference differs (NaN positions must match "
                       f"the reference's), first at {first}")

    score = 0.0
    if tol.mode == "exact":
        neq_mask = (o != r) & ~(torch.isnan(o) & torch.isnan(r))
        neq = int(neq_mask.sum())
        bad_mask |= neq_mask.reshape(shape)
        m["outside_tol"] = neq
        if neq and not reasons:
            reasons.append(f"{neq} of {o.numel()} elements differ (exact compare), worst at {m['worst_index']}: "
                           f"got {m['worst_got']:g}, expected {m['worst_expected']:g}")
        score = math.inf if neq else 0.0
    elif tol.mode == "allclose":
        same = (torch.isnan(o) & torch.isnan(r)) | (torch.isinf(o) & torch.isinf(r) & (torch.sign(o) == torch.sign(r)))
        ad = torch.where(same, torch.zeros_like(o), (o - r).abs())
        allowance = torch.where(same, torch.ones_like(r), tol.atol + tol.rtol * r.abs()).clamp_min(1e-300)
        inside = same | (ad <= allowance)
        bad_mask |= (~inside).reshape(shape)
        outside = int((~inside).sum())
        finite_ref = r[torch.isfinite(r)]
        scale = _f(finite_ref.abs().max()) if finite_ref.numel() else 0.0
        if 0 < scale <= tol.atol:
            m["warnings"].append(f"atol={tol.atol:g} is larger than the output's scale (max |ref| = {scale:.3g}): "
                                 f"any answer near zero passes the elementwise test; rel_l2_err="
                                 f"{m['rel_l2_err']:.3g}")
        m["outside_tol"] = outside
        ratio = torch.where(inside, ad / allowance, torch.full_like(ad, math.inf))
        score = _f(ratio.max()) if o.numel() else 0.0
        if math.isfinite(tol.max_rel_l2) and m["rel_l2_err"] > tol.max_rel_l2 and not outside and not reasons:
            reasons.append(f"rel_l2_err {m['rel_l2_err']:.3g} > {tol.max_rel_l2:g}: the output is wrong as a whole "
                           f"although every element is within atol={tol.atol:g}")
            score = math.inf
        if outside and not reasons:
            wi = int(torch.argmax(ratio))
            reasons.append(
                f"{outside} of {o.numel()} elements outside {tol.describe()}, worst at {_index(wi, shape)}: "
                f"got {_f(o[wi]):.6g}, expected {_f(r[wi]):.6g}")
    else:  # psnr
        m["outside_tol"] = 0
        # Whole-tensor figures cannot see small values set to zero (they sit below the tensor's noise floor); show
        # them when they are many: a softmax that drops small probabilities passes PSNR and cosine.
        tiny = torch.finfo(out.dtype).tiny if out.is_floating_point() else 0.0
        flushed = (o == 0) & (r.abs() >= tiny) & torch.isfinite(r)
        n_flushed = int(flushed.sum())
        if n_flushed and n_flushed >= 0.01 * o.numel():
            m["warnings"].append(f"{n_flushed} of {o.numel()} elements are 0 where the reference is not (up to "
                                 f"|ref| = {_f(r[flushed].abs().max()):.3g}): small values flushed to zero? "
                                 "PSNR and cosine cannot see them")
        psnr, cos = m["psnr_db"], m["cosine"]
        if math.isnan(psnr) or math.isnan(cos):
            score = math.inf
        else:
            s1 = 0.0 if psnr == math.inf else 10 ** ((tol.min_psnr_db - psnr) / 20.0)
            s2 = (1.0 - cos) / max(1.0 - tol.min_cosine, 1e-300)
            score = max(s1, s2)
        if not reasons:
            if not (psnr >= tol.min_psnr_db):
                reasons.append(f"psnr_db {psnr:.1f} < {tol.min_psnr_db:g}")
            if not (cos >= tol.min_cosine):
                reasons.append(f"cosine {cos:.6f} < {tol.min_cosine:g}")
            if math.isfinite(tol.max_rel_l2) and not (m["rel_l2_err"] <= tol.max_rel_l2):
                reasons.append(f"rel_l2_err {m['rel_l2_err']:.3g} > {tol.max_rel_l2:g}")
    if math.isfinite(tol.max_scale_err) and not (m["scale_err"] <= tol.max_scale_err) and not reasons:
        reasons.append(f"scale_err {m['scale_err']:.3g} > {tol.max_scale_err:g}: the output is off from the "
                       "reference by an overall factor (a wrong constant or normalization, which cosine similarity "
                       "cannot see, or accumulated error)")
        score = max(score, m["scale_err"] / tol.max_scale_err)
    m["where"] = where_bad(bad_mask) if reasons else ""
    if reasons and m["where"]:
        reasons[0] += f" ({'bad elements in ' + m['where']})"
    if reasons:
        score = math.inf if not math.isfinite(score) or score <= 1 else score
    m["ok"] = not reasons
    m["reason"] = "; ".join(reasons)
    m["score"] = score
    return m


LARGE = 1 << 26  # outputs with more elements than this are judged in chunks (memory stays bounded)


def verdict_large(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, allow_nan: bool = False,
                  device: str = "cpu", chunk: int = 1 << 24) -> dict[str, Any]:
    """``verdict`` for outputs too large to hold several float64 copies of (more than 2**26 elements, e.g. the
    >2**31-element tensors of cases.md int32-overflow): the same figures and rules, accumulated over chunks of
    ``chunk`` elements on ``device``. ``where`` gives the flat index range of the bad elements.

    Raises:
        ValueError: the shapes differ.
    """
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    of, rf = out.reshape(-1), ref.reshape(-1)
    n = of.numel()
    a = {"max_abs": 0.0, "max_abs_i": 0, "max_rel": 0.0, "sq": 0.0, "dot": 0.0, "no2": 0.0, "nr2": 0.0, "peak": 0.0,
         "nan_o": 0, "inf_o": 0, "nan_r": 0, "nonfinite": 0, "unwritten": 0, "outside": 0, "ratio": 0.0,
         "ratio_i": 0, "first_bad": None, "last_bad": None, "first_unwritten": None, "nan_seen": False}
    for s in range(0, n, chunk):
        raw = of[s:s + chunk]
        o = raw.to(device=device, dtype=torch.float64)
        r = rf[s:s + chunk].to(device=device, dtype=torch.float64)
        nan_o, nan_r = torch.isnan(o), torch.isnan(r)
        same = (nan_o & nan_r) | (torch.isinf(o) & torch.isinf(r) & (torch.sign(o) == torch.sign(r)))
        d = torch.where(same, torch.zeros_like(o), o - r)
        ad = d.abs()
        nonfinite = ~torch.isfinite(ad)
        oc, rc = torch.where(same, 0.0, o), torch.where(same, 0.0, r)
        a["nan_o"] += int(nan_o.sum())
        a["inf_o"] += int(torch.isinf(o).sum())
        a["nan_r"] += int(nan_r.sum())
        a["nonfinite"] += int(nonfinite.sum())
        a["nan_seen"] |= bool(nonfinite.any())
        badness = torch.where(nonfinite, torch.full_like(ad, math.inf), ad)
        i = int(torch.argmax(badness))
        if float(badness[i]) > a["max_abs"] or (s == 0):
            a["max_abs"], a["max_abs_i"] = float(badness[i]), s + i
        ar = r.abs()
        nz = (ar > 0) & torch.isfinite(ar)
        if bool(nz.any()):
            rel = float((ad[nz] / ar[nz]).max())  # NaN propagates, as in the full verdict
            a["max_rel"] = math.nan if math.isnan(rel) or math.isnan(a["max_rel"]) else max(a["max_rel"], rel)
        a["sq"] += float((d * d).sum())
        a["dot"] += float((oc * rc).sum())
        a["no2"] += float((oc * oc).sum())
        a["nr2"] += float((rc * rc).sum())
        fr = r[torch.isfinite(r)]
        if fr.numel():
            a["peak"] = max(a["peak"], float(fr.abs().max()))
        unwritten = poisoned_chunk(raw).to(device)
        a["unwritten"] += int(unwritten.sum())
        if a["first_unwritten"] is None and bool(unwritten.any()):
            a["first_unwritten"] = s + int(torch.nonzero(unwritten)[0])
        if tol.mode == "allclose":
            allowance = torch.where(same, torch.ones_like(r), tol.atol + tol.rtol * ar).clamp_min(1e-300)
            inside = same | (ad <= allowance)
        elif tol.mode == "exact":
            inside = same | (o == r)
        else:
            inside = ~nonfinite
        bad = ~inside | unwritten | nonfinite
        a["outside"] += int((~inside).sum())
        if tol.mode == "allclose":
            ratio = torch.where(inside, ad / allowance, torch.full_like(ad, math.inf))
            j = int(torch.argmax(ratio))
            if float(ratio[j]) > a["ratio"]:
                a["ratio"], a["ratio_i"] = float(ratio[j]), s + j
        if bool(bad.any()):
            idx = torch.nonzero(bad)[:, 0]
            a["first_bad"] = s + int(idx[0]) if a["first_bad"] is None else a["first_bad"]
            a["last_bad"] = s + int(idx[-1])
    mse = a["sq"] / max(n, 1)
    no, nr = math.sqrt(a["no2"]), math.sqrt(a["nr2"])
    cosine = cosine_of(a["dot"], no, nr)
    nd = math.sqrt(a["sq"])
    rel_l2 = nd / nr if nr > 0 else (0.0 if nd == 0 else math.inf)
    psnr = psnr_db(mse, a["peak"])
    scale = scale_err(a["dot"], a["nr2"])
    wi = a["max_abs_i"]
    m: dict[str, Any] = {
        "max_abs_err": math.nan if math.isnan(mse) else a["max_abs"], "max_rel_err": a["max_rel"], "mse": mse,
        "rmse": math.sqrt(mse) if mse == mse else math.nan, "psnr_db": psnr, "cosine": cosine, "rel_l2_err": rel_l2,
        "scale_err": scale, "nan_count": a["nan_o"], "inf_count": a["inf_o"], "ref_nan_count": a["nan_r"],
        "nonfinite_mismatch": a["nonfinite"], "worst_index": _index(wi, tuple(out.shape)),
        "worst_got": float(of[wi]), "worst_expected": float(rf[wi]), "unwritten": a["unwritten"],
        "outside_tol": a["outside"], "warnings": [], "chunked": True,
    }
    reasons = []
    if a["nan_r"] and not allow_nan:
        reasons.append(f"reference invalid: {a['nan_r']} NaN in the reference output")
    if a["unwritten"]:
        reasons.append(f"{a['unwritten']} elements unwritten at {_index(a['first_unwritten'], tuple(out.shape))}")
    elif a["nonfinite"]:
        reasons.append(f"{a['nonfinite']} NaN/inf where the reference differs (NaN positions must match the "
                       f"reference's)")
    if tol.mode in ("allclose", "exact") and a["outside"] and not reasons:
        reasons.append(f"{a['outside']} of {n} elements outside {tol.describe()}, worst at "
                       f"{_index(a['ratio_i'] if tol.mode == 'allclose' else wi, tuple(out.shape))}")
    if tol.mode == "psnr" and not reasons:
        if not (psnr >= tol.min_psnr_db):
            reasons.append(f"psnr_db {psnr:.1f} < {tol.min_psnr_db:g}")
        if not (cosine >= tol.min_cosine):
            reasons.append(f"cosine {cosine:.6f} < {tol.min_cosine:g}")
    if math.isfinite(tol.max_rel_l2) and not (rel_l2 <= tol.max_rel_l2) and not reasons:
        reasons.append(f"rel_l2_err {rel_l2:.3g} > {tol.max_rel_l2:g}")
    if math.isfinite(tol.max_scale_err) and not (scale <= tol.max_scale_err) and not reasons:
        reasons.append(f"scale_err {scale:.3g} > {tol.max_scale_err:g}: a wrong constant or normalization")
    m["where"] = f"flat indices {a['first_bad']}..{a['last_bad']} of {n}" if reasons and a["first_bad"] is not None \
        else ""
    if reasons and m["where"]:
        reasons[0] += f" (bad elements in {m['where']})"
    m["ok"] = not reasons
    m["reason"] = "; ".join(reasons)
    m["score"] = math.inf if reasons else (a["ratio"] if tol.mode == "allclose" else 0.0)
    return m


def poisoned_chunk(raw: torch.Tensor) -> torch.Tensor:
    from ktui.worker.tensors import poisoned_mask

    return poisoned_mask(raw.cpu().contiguous())
