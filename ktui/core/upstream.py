"""The upstream checker's verdict beside ktui's: folding the judge's per-case ``upstream`` entries (GPU MODE's
``check_implementation``, run in the judge: ``ktui.worker.upstream``) into one, naming the kind of ktui's failure,
and saying where the two differ (``upstream: pass, ktui: fail (dtype)``).

Pure functions over the wire's data: used by the correctness rung (its summary and figures), ``ktui run``'s report
and ``ktui eval``'s table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ktui.core.figures import UpstreamFigures

# ktui's failure reasons (the judge's and the rungs' own words) -> a short kind, first match wins
_KINDS: tuple[tuple[str, str], ...] = (
    ("has dtype", "dtype"),
    ("has shape", "shape"),
    ("structure differs", "structure"),
    ("output(s) (", "structure"),
    ("unwritten", "unwritten elements"),
    ("input modified", "input modified"),
    ("aliases input", "aliasing"),
    ("not the declared output buffer", "output buffer"),
    ("nondeterministic", "nondeterministic"),
    ("second call on identical inputs", "nondeterministic"),
    ("changed after the call", "output changed after return"),
    ("times torch, not a kernel", "no kernel launched"),
    ("tampered", "tampered worker"),
    ("impossible", "impossible time"),
    ("out-of-bounds", "out of bounds"),
    ("outside atol", "values"),
    ("elements outside", "values"),
    ("rel_l2_err", "values"),
    ("psnr_db", "values"),
    ("cosine", "values"),
    ("scale_err", "values"),
)
_DTYPE = re.compile(r"(\S+) has dtype (\w+), expected (\w+)")


def failure_kind(rung: str, reason: str) -> str:
    """A short name for why ktui failed: ``dtype``, ``shape``, ``values``, ``unwritten elements``... from the
    failing rung's reason, else the rung's name (``run``, ``benchmark``)."""
    for needle, kind in _KINDS:
        if needle in reason:
            return kind
    return rung


def fold(cases: Sequence[Mapping[str, Any]]) -> UpstreamFigures | None:
    """One verdict from the judge's per-case ``upstream`` entries, or None when no case carried one (the problem
    has no checker, or none of its cases was upstream's own). ``fail`` when a case failed, else ``error`` when the
    checker raised, else ``pass`` when a case passed, else ``n/a``; ``message`` and ``case`` are the first failing
    (or erring, or unavailable) case's."""
    checked = [c for c in cases if c.get("upstream")]
    if not checked:
        return None
    counts = {s: sum(1 for c in checked if c["upstream"] == s) for s in ("pass", "fail", "error", "n/a")}
    verdict = next((s for s in ("fail", "error") if counts[s]), "pass" if counts["pass"] else "n/a")
    first = next((c for c in checked if c["upstream"] == verdict), checked[0])
    return {
        "verdict": verdict,
        "checked": len(checked),
        "passed": counts["pass"],
        "failed": counts["fail"],
        "errors": counts["error"],
        "unavailable": counts["n/a"],
        "message": "" if verdict == "pass" else str(first.get("upstream_message", "")),
        "case": "" if verdict == "pass" else str(first.get("case") or first.get("label", "")),
    }


def describe(up: Mapping[str, Any]) -> str:
    """``upstream check_implementation: pass on 10 cases`` or ``...: fail on 3 of 10 cases (spec=(1023,) seed=7:
    mismatch found! ...)``."""
    n, verdict = up["checked"], up["verdict"]
    if verdict == "pass":
        return f"upstream check_implementation: pass on {n} case{'s' if n != 1 else ''}"
    bad = {"fail": up["failed"], "error": up["errors"], "n/a": up["unavailable"]}[verdict]
    where = f"{up['case']}: " if up.get("case") else ""
    return f"upstream check_implementation: {verdict} on {bad} of {n} cases ({where}{up.get('message', '')})"


def differs(upstream: str, ktui_ok: bool, kind: str) -> str:
    """'' when the upstream checker and ktui agree (or upstream gave no verdict), else ``upstream: pass, ktui: fail
    (dtype)`` or ``upstream: fail, ktui: pass``."""
    if upstream not in ("pass", "fail", "error"):
        return ""
    up_ok = upstream == "pass"
    if up_ok == ktui_ok:
        return ""
    return f"upstream: {upstream}, ktui: " + ("pass" if ktui_ok else f"fail ({kind})")


def dtype_note(reason: str) -> str:
    """Where ktui failed an output on its dtype and the upstream checker passed it: what differs and why the
    verdicts differ, from ktui's reason (``out has dtype float32, expected float64``); '' for another reason."""
    m = _DTYPE.search(reason)
    if m is None:
        return ""
    path, got, want = m.groups()
    return (
        f"{path} is {got} where the reference returns {want}: upstream's check_implementation compares values only "
        f"(it passes this {got} output), ktui judges dtypes too (return {want}, or have the reference return {got})"
    )
