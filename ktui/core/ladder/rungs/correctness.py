"""The ``correctness`` rung: the judge compares every executed case's output with the reference computed in float64
(``ktui.worker.judge``, the tolerance policy in ``ktui.worker.tolerance``) and this module folds the per-case
verdicts into one rung (``correctness_result``).

Figures: ``specs`` (per spec: label, spec, ok, seeds, cases, the worst case's ``METRIC_KEYS``, tolerance,
precision, score, unsupported layouts, failed cases), ``worst`` (the worst spec's label), ``cases`` (how many).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ktui.core import upstream
from ktui.core.events import FirstVerdict
from ktui.core.ladder.context import RunContext, RungFailed
from ktui.core.ladder.judge_queue import URGENT
from ktui.core.ladder.rungs.run import times_torch
from ktui.core.results import ErrorInfo, RungResult, Status, fmt
from ktui.core.workers.client import WorkerError
from ktui.protocol import CaseVerdict, CompareReply, CompareRequest, ExecutedCase, json_float

if TYPE_CHECKING:
    from ktui.protocol import ProblemInfo

# What each spec entry copies from its worst case: the error metrics (``ktui.worker.metrics``), where the worst
# element sits and what it holds, the precision-dependent expectations and the output's path in the result.
METRIC_KEYS = (
    "max_abs_err",
    "max_rel_err",
    "mse",
    "rmse",
    "psnr_db",
    "cosine",
    "rel_l2_err",
    "rel_l1_err",
    "off_frac",
    "gross_ratio",
    "scale_err",
    "nan_count",
    "inf_count",
    "unwritten",
    "outside_tol",
    "worst_index",
    "worst_got",
    "worst_expected",
    "where",
    "baseline_psnr_db",
    "expected_rel_l2_fp32",
    "expected_rel_l2_tf32",
    "expected_rel_l2_tf32_rz",
    "native_max_abs_err",
    "run_to_run_spread",
    "path",
)
MAX_WARNINGS = 8  # distinct warnings kept on the rung; the rest are counted in one last line


WARNING_KIND = 48  # ``collapse_warnings``: warnings whose first this many characters agree are of one kind


def collapse_warnings(
    passing: list[tuple[str | None, str]], named: dict[tuple[str, str], str] | None = None
) -> list[str]:
    """The passing cases' warnings (``passing``: (spec label, warning), in order; a label of None: a warning of the
    rung's own, kept as it is) as rung warnings, ``spec=<label>: <warning>``, each kind once, where its first
    stood: the first of a kind in full, named by the first case that gave it where ``named`` ((spec label, warning)
    -> that case's label, ``spec=... seed=... dist=...``) knows it (new-user trial 31, F1: a warning must say
    which case to replay), and one line for the rest (``the same (...) on 11 more cases: spec=(1, 2,
    63, fp16), ...``), a kind being the warning's first ``WARNING_KIND`` characters (new-user trials 26 F3 and 27:
    an honest fp16 attention got 67 lines "judged against the reference's own float16 error", one per case, before
    anything else)."""
    kinds: dict[str, list[tuple[str | None, str]]] = {}
    for label, w in passing:
        kinds.setdefault(w if label is None else w[:WARNING_KIND], []).append((label, w))
    out: list[str] = []
    for group in kinds.values():
        label, first = group[0]
        if label is None:
            out.append(first)
            continue
        out.append(f"{(named or {}).get((label, first)) or f'spec={label}'}: {first}")
        rest = [(lb, w) for lb, w in group[1:] if (lb, w) != (label, first)]
        if len(rest) == 1:
            out.append(f"spec={rest[0][0]}: {rest[0][1]}")
        elif rest:
            labels = list(dict.fromkeys(str(lb) for lb, _ in rest))
            shown = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
            out.append(f"the same ({first[:WARNING_KIND].rstrip()} ...) on {len(rest)} more cases: spec={shown}")
    return out


def run(ctx: RunContext) -> RungResult:
    """Wait for the judge's prepared reference outputs, then compare the executed cases.

    Raises:
        RungFailed: run did not execute the cases, or the judge's prepare failed (its error, with the user's paths).
    """
    if ctx.executed is None:
        raise RungFailed(ErrorInfo("RuntimeError", "correctness needs run first"))
    t = ctx.options.timeouts["correctness"]
    assert ctx.prepare is not None and ctx.problem is not None
    try:
        ctx.prepare.result(timeout=t)
    except WorkerError as exc:
        raise RungFailed(ctx.user_paths(exc.info)) from None
    verdicts, at_end = _judge_all(ctx, t)
    # a spec whose calls launched no kernel fails "times torch, not a kernel" (cases.md hidden-torch)
    rr = times_torch(correctness_result(verdicts, ctx.problem, uses_dot=ctx.uses_dot), ctx)
    rr = with_upstream(rr, verdicts)  # the problem's own checker beside ktui's verdict, once that verdict is final
    rr.figures["judged_at_end"] = at_end  # the cases no comparison during the run had judged as they ended
    rr.figures["seed"] = ctx.seed  # the run's base seed: ``--seed`` draws the same cases and fuzzed specs again
    rr.figures["verdict_at_s"] = round(time.perf_counter() - ctx.t0, 3)
    first = _first_verdict(ctx, t)
    if first is not None:
        rr.figures["first_verdict"] = {
            "status": first.result.status.value,
            "summary": first.result.summary,
            "cases": first.cases,
            "at_s": round(first.seconds, 3),
        }
    return rr


def _judge_all(ctx: RunContext, timeout_s: float) -> tuple[list[CaseVerdict], int]:
    """Every executed case's verdict, in order: those the judge gave while the run went on (``ctx.streamed``) for
    the cases whose final entry is the one it judged, and one comparison now for the others (the last ones, and
    those the end of the run changed: an output that changed after the calls, say); and how many were judged now."""
    assert ctx.executed is not None
    done: dict[int, CaseVerdict] = {}
    for start, judged, fut in ctx.streamed:
        try:
            reply = fut.result(timeout=timeout_s)
        except Exception:
            continue  # judged again below
        for k, (entry, verdict) in enumerate(zip(judged, reply["cases"], strict=True)):
            i = start + k
            if i < len(ctx.executed) and _as_judged(ctx.executed[i]) == _as_judged(entry):
                done[i] = verdict
    todo = [i for i in range(len(ctx.executed)) if i not in done]
    on_progress = ctx.progress("correctness", "verdicts")
    # contiguous runs of what is left, each one comparison (its folders counted from its first case)
    runs: list[list[int]] = []
    for i in todo:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    for part in runs:
        params: CompareRequest = {
            **ctx.sources(),
            "cases": [ctx.executed[i] for i in part],
            "out_dir": str(ctx.out_dir),
            "first_index": part[0],
        }
        res = ctx.judge.compare(params, timeout_s=timeout_s, on_progress=on_progress)
        done.update(zip(part, res["cases"], strict=True))
    return [done[i] for i in range(len(ctx.executed))], len(todo)


# What the end of the run adds to every entry that the judge does not read: the launches each case made (the run
# and correctness rungs fold them, ``times_torch``)
NOT_JUDGED = frozenset({"launches"})


def _as_judged(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An executed case as the judge reads it: without ``NOT_JUDGED``."""
    return {k: v for k, v in entry.items() if k not in NOT_JUDGED}


def stream_compare(ctx: RunContext, start: int, entries: list[ExecutedCase]) -> None:
    """Queue the judge's comparison of executed cases ``start ..`` (``entries``, as the candidate reported them)
    behind the references being prepared; ``_judge_all`` keeps its verdicts for the cases that did not change."""
    assert ctx.background is not None
    params: CompareRequest = {
        **ctx.sources(),
        "cases": entries,
        "out_dir": str(ctx.out_dir),
        "first_index": start,
    }
    timeout = ctx.options.timeouts["correctness"]
    ctx.streamed.append((start, entries, ctx.background.submit(lambda: ctx.judge.compare(params, timeout_s=timeout))))


def start_first_verdict(ctx: RunContext, entries: list[ExecutedCase]) -> None:
    """Have the judge compare the first sweep's executed cases (``entries``: the leading ``first`` cases, as the
    candidate reported each when it ran) ahead of the references still being prepared (``URGENT``), while the other
    cases run, and publish the verdict (``FirstVerdict``) when it is in; ``ctx.first_verdict`` holds it for the full
    verdict's figures, and its verdicts count for the full one where the end of the run changed nothing. The first
    verdict is provisional: the end-of-run checks (outputs changed after the calls, threads left running, launches)
    are the full verdict's."""
    assert ctx.background is not None and ctx.problem is not None
    params: CompareRequest = {**ctx.sources(), "cases": entries, "out_dir": str(ctx.out_dir), "first_index": 0}
    problem, timeout = ctx.problem, ctx.options.timeouts["correctness"]
    reply: Future[CompareReply] = ctx.background.submit(
        lambda: ctx.judge.compare(params, timeout_s=timeout), priority=URGENT
    )
    ctx.streamed.append((0, entries, reply))

    def publish() -> FirstVerdict:
        res = reply.result()
        ev = FirstVerdict(
            key=ctx.kernel.key,
            run_id=ctx.run_id,
            result=correctness_result(res["cases"], problem, uses_dot=ctx.uses_dot),
            cases=len(entries),
            seconds=time.perf_counter() - ctx.t0,
        )
        ctx.bus.publish(ev)
        return ev

    ctx.first_verdict = ctx.background.submit(publish, priority=URGENT)


def _first_verdict(ctx: RunContext, timeout_s: float) -> FirstVerdict | None:
    """The first verdict, once in (None when there was none or it failed: the full verdict says why)."""
    if ctx.first_verdict is None:
        return None
    try:
        return ctx.first_verdict.result(timeout=timeout_s)
    except Exception:
        return None


def correctness_result(
    cases: Sequence[Mapping[str, Any]], describe: ProblemInfo, uses_dot: bool | None = None
) -> RungResult:
    """Fold per-case verdicts into the correctness rung: per spec the worst case's metrics, the worst spec named in
    the summary, the worst failing case (spec, seed, distribution, layout) and its reason as the error; unsupported
    layouts and per-case warnings (precision, nondeterminism within tolerance, scale) as rung warnings: those of
    passing cases; a failing case's warnings are the failure's symptoms, so the worst one's follow its error and
    the others are counted in one warning.

    ``cases`` are the judge's ``compare`` reply: each has ``spec_index``, ``seed``, ``ok``, and ``score`` (higher is
    worse), ``case`` (its one-line name), ``reason``, ``label``, the metrics, ``warnings`` and ``unsupported`` (a
    layout the kernel declined) where they apply. ``describe`` gives the specs' ``labels`` and ``tests``. The worst
    case is the one with the highest score; warnings are deduplicated, in order, and capped at ``MAX_WARNINGS``.
    A spec whose float32 error is at the TF32 level (the judge's ``tf32_level``) gets one warning, unless the compile
    rung found no dot in any launch (``uses_dot`` False: the flag names a tl.dot in TF32).
    """
    fuzzed = set(describe.get("fuzzed", []))
    by_spec: dict[int, list[Mapping[str, Any]]] = {}
    for c in cases:
        by_spec.setdefault(c["spec_index"], []).append(c)
    specs = []
    warnings: list[str] = []
    failed_warnings: list[str] = []  # of the failing cases (new-user trial 19: 7 lines under a clear failure)
    passing: list[tuple[str | None, str]] = []  # (spec label, warning) of the passing cases; None: a rung warning
    named: dict[tuple[str, str], str] = {}  # (spec label, warning) -> the first passing case's label that gave it
    for i, cs in sorted(by_spec.items()):
        judged = [c for c in cs if not c.get("unsupported") and not c.get("skipped")]
        worst = max(judged or cs, key=lambda c: json_float(c.get("score", 0.0)))
        entry = {
            "label": describe["labels"][i],
            "spec": describe["tests"][i],
            "fuzzed": i in fuzzed,
            "ok": all(c["ok"] for c in cs),
            "seeds": sorted({c["seed"] for c in cs}),
            "cases": len(cs),
            "worst_seed": worst["seed"],
            "worst_case": worst.get("case", ""),
            "reason": worst.get("reason", ""),
            "tolerance": worst.get("tolerance"),
            "precision": worst.get("precision"),
            "score": worst.get("score"),
            # what the kernel refused: a layout, or "scalars" (another value of a float argument)
            "unsupported_layouts": sorted({c.get("layout") or c.get("dist", "") for c in cs if c.get("unsupported")}),
            "failed_cases": [c.get("case", "") for c in cs if not c["ok"]],
        }
        entry.update({k: worst.get(k) for k in METRIC_KEYS})
        specs.append(entry)
        tf32 = [c for c in cs if c.get("tf32_level")]
        if tf32 and uses_dot is not False:
            passing.append((None, f"spec={entry['label']}: {tf32_warning(max(tf32, key=lambda c: c['rel_l2_err']))}"))
        for c in cs:
            if c.get("unsupported"):
                passing.append((None, f"{c.get('case') or 'spec=' + entry['label']} unsupported: {c['unsupported']}"))
            if c["ok"]:
                for w in c.get("warnings", []):
                    passing.append((entry["label"], w))
                    named.setdefault((entry["label"], w), str(c.get("case") or ""))
            else:  # a failing case's warnings are mostly the failure's symptoms: the worst one's go with its error
                failed_warnings += c.get("warnings", [])
    warnings += collapse_warnings(passing, named)
    # special-values cases not judged, said once a distribution: those whose float64 truth its own roundings move
    # (``compare.undetermined_truth``: new-user trial 22 F9), and those the reference is no valid target on (it
    # gives NaN there, or its own precision is wrong as a whole: an L2 norm's square overflowing on the extreme
    # family's max, which silently took the family's small rows along; 2026-12-07)
    by_dist: dict[tuple[str, bool], list[Mapping[str, Any]]] = {}  # (dist, whether the float64 truth is no truth)
    for c in cases:
        if c.get("skipped"):
            by_dist.setdefault((str(c.get("dist")), "no truth on these values" in str(c["skipped"])), []).append(c)
    untruthful = sorted(by_dist.items(), key=lambda kv: not kv[0][1])  # the truth's own roundings first
    warnings[:0] = [
        f"{len(void)} case{'s' if len(void) > 1 else ''} on dist={dist} not judged: "
        f"{void[0].get('case', '')}: {void[0]['skipped']}"
        for (dist, _), void in untruthful
    ]
    unique = list(dict.fromkeys(warnings))
    if len(unique) > MAX_WARNINGS:
        unique = unique[:MAX_WARNINGS] + [f"... and {len(unique) - MAX_WARNINGS} more warnings"]
    worst_spec = max(specs, key=lambda s: json_float(s.get("score", 0.0))) if specs else None
    figures = {
        "specs": specs,
        "worst": worst_spec["label"] if worst_spec else None,
        "cases": len(cases),
        "fuzzed": [describe["labels"][i] for i in sorted(fuzzed)],  # this run's drawn specs (``--seed`` replays)
        "skipped": sum(bool(c.get("skipped")) for c in cases),  # special-values cases the reference is invalid on
    }
    failing = [c for c in cases if not c["ok"]]
    if failing:
        # the headline: the worst failing case, one where the reference itself holds when there is one (an fp16
        # overflow the reference fails too headed a kernel whose clear failures were bf16 ones: new-user trial 26, F4)
        clear = [c for c in failing if not c.get("reference_fails_too")] or failing
        # and a plain call's (no grad mode, contiguous inputs) when one fails: "grad=requires_grad" leading a forward
        # whose every call fails puzzled a user whose reference makes nothing requiring grad (new-user trial 31, F7)
        plain = [c for c in clear if not c.get("grad") and c.get("layout", "contiguous") == "contiguous"] or clear
        f = max(plain, key=lambda c: json_float(c.get("score", math.inf)))
        detail = f"{f.get('case') or 'spec=' + f['label']}: {f['reason']}"
        if f.get("max_abs_err") is not None:
            detail += f"; max_abs_err={fmt(f['max_abs_err'])}"
        n_fail = sum(not s["ok"] for s in specs)
        suffix = f" ({n_fail} of {len(specs)} specs failed)" if n_fail > 1 else ""
        own = list(dict.fromkeys(f.get("warnings", [])))
        message = detail + suffix + "".join(f"\n  and in that case: {w}" for w in own)
        rest = len(set(failed_warnings) - set(own))
        if rest:
            unique.append(
                f"{rest} more warning{'s' * (rest != 1)} of other failing cases left out (most are symptoms of the "
                "failure; the cases that pass keep theirs)"
            )
        return RungResult(
            "correctness",
            Status.FAILED,
            summary=detail + suffix,
            figures=figures,
            error=ErrorInfo("CorrectnessError", message),
            warnings=unique,
        )
    w = worst_spec
    # how much of its tolerance the worst spec used: an absolute error reads alarming on inputs of 1e15 (the large
    # family) where it is a float32 rounding (a new user read max_abs_err=6.71e+07 on a passing version)
    score = json_float(w.get("score")) if w else None
    used = f" at {score:.0%} of tolerance" if isinstance(score, float) and math.isfinite(score) else ""
    # and the distribution its worst case drew (max_abs_err=6.71e+07 on a vector add reads as a bug without it)
    dist = re.search(r"\bdist=(\S+)", str(w.get("worst_case") or "")) if w else None
    drawn = f" dist={dist.group(1)}" if dist else ""
    summary = (
        (
            f"worst={w['label']}{drawn}{used} max_abs_err={fmt(w['max_abs_err'])} max_rel_err={fmt(w['max_rel_err'])} "
            f"psnr_db={fmt(w['psnr_db'])} cosine={fmt(w['cosine'], 7)}"
        )
        if w
        else "no specs"
    )
    return RungResult(
        "correctness", Status.OK, summary=summary + f" ({len(cases)} cases)", figures=figures, warnings=unique
    )


def with_upstream(rr: RungResult, cases: Sequence[Mapping[str, Any]]) -> RungResult:
    """The correctness rung ``rr`` with the upstream checker's verdict beside it (``figures["upstream"]``, and
    ``upstream_differs`` where the two differ), both in its summary: ``...; upstream check_implementation: pass on
    10 cases; upstream: pass, ktui: fail (dtype)`` and, for a dtype, what differs and why the verdicts do. The
    rung's status is ktui's alone. Unchanged when no case carried an upstream verdict."""
    up = upstream.fold(cases)
    if up is None:
        return rr
    rr.figures["upstream"] = up
    ok = rr.status is not Status.FAILED
    reason = rr.error.message if rr.error is not None else rr.summary
    kind = upstream.failure_kind("correctness", reason)
    differ = upstream.differs(up["verdict"], ok, kind)
    clause = upstream.describe(up)
    if differ:
        rr.figures["upstream_differs"] = differ
        note = upstream.dtype_note(reason) if kind == "dtype" and up["verdict"] == "pass" else ""
        clause += f"; {differ}" + (f": {note}" if note else "")
    rr.summary = f"{rr.summary}; {clause}" if rr.summary else clause
    return rr


def tf32_warning(c: Mapping[str, Any]) -> str:
    """The TF32 flag for one case's figures (``rel_l2_err``, ``expected_rel_l2_fp32``, ``expected_rel_l2_tf32``)."""
    return (
        f"precision lower than declared float32: rel_l2_err {c['rel_l2_err']:.2g} is at the TF32 level (expected "
        f"{c['expected_rel_l2_fp32']:.2g} for fp32, {_tf32_range(c)} for tf32): a tl.dot in TF32 "
        '(input_precision="ieee" keeps fp32), or operands or an accumulator rounded to fp16/bf16?'
    )


def _tf32_range(c: Mapping[str, Any]) -> str:
    """``5.2e-05`` (rounded TF32), or ``5.2e-05 (rounded) to 0.00073 (truncated)`` when truncation differs."""
    rn, rz = c["expected_rel_l2_tf32"], c.get("expected_rel_l2_tf32_rz")
    if rz is None or f"{rz:.2g}" == f"{rn:.2g}":
        return f"{rn:.2g}"
    return f"{rn:.2g} (rounded) to {rz:.2g} (truncated)"
