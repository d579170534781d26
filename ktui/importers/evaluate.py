"""``ktui eval``: the ladder over a set of problems, and one table.

For each problem (all of the workspace's by default) the best version, or every version with ``all_versions``,
goes through the same ``core.Session`` ladder as ``ktui run``. A stored result (``.ktui/results/``) is reused when
it ran on the same kind of device and neither the version's source nor the reference changed since
(``core.status.staleness``): an interrupted ``ktui eval`` resumes where it stopped, and a second one runs nothing.

The best version of a problem is, among its fresh stored results on this kind of device, the one whose correctness
passed with the highest worst-spec speedup (on the CPU, where nothing is timed, the newest that passed); a version
that was not verified here (``◌ needs a GPU``: a CuTeDSL version on the CPU) only when none passed; with no fresh
result, its newest version.

A row that needs a GPU is not correct (it has no correctness verdict) and not failed: ``correct`` does not count it,
``needs_gpu`` does, and ``ktui eval``'s exit code is 0 when no row failed (as ``ktui run``'s for such a version).

Figures (KernelBench's, ``scripts/benchmark_eval_analysis.py``), each against three baselines timed by the judge
on the same inputs: the reference (``ref_kernel`` as ktui times it), torch eager (the reference module's
``eager``, which an imported KernelBench problem defines as ``Model.forward``; else ``ref_kernel`` again) and
``torch.compile`` of that (``ktui.worker.baselines``; the ladder runs with ``LadderOptions.baselines``). A speedup
is baseline median / version median on the worst benchmark spec. ``fast_p`` is the fraction of the rows that are
correct (every rung passed) *and* faster than the baseline by more than ``p``; the geometric mean speedup is over
the correct rows with a speedup. A time the benchmark rung reports as impossible (under the roofline floor) fails
that rung, so it is never a speedup and never enters a mean. A row whose reference torch.compile could not compile
has no compiled baseline: it leaves the torch.compile figures' denominator (the table says how many). On the CPU
nothing is timed (the Triton interpreter): the figures are ``None`` and the table says "needs a GPU".

Beside ktui's verdict each row carries the upstream checker's (GPU MODE's ``check_implementation``, run by the
judge: ``ktui.core.upstream``) and, where the two differ, says so (``upstream: pass, ktui: fail (dtype)``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ktui.core import report, upstream
from ktui.core.results import LadderResult, RungResult, Status, placement_label, standing
from ktui.core.scheduler import is_broken
from ktui.core.status import staleness
from ktui.core.store import ResultStore
from ktui.core.workspace import KernelRef, Workspace
from ktui.importers.gpumode import solution_of


@dataclass
class Row:
    """One version's line of the table.

    Attributes:
        verdict: ``report.verdict`` (``✓ 1.23x``, ``✓ ok``, ``✗ correctness``...).
        ok: every rung passed or was skipped.
        correct: the correctness rung passed.
        speedup: the worst benchmark spec's speedup over the reference (None: not timed, or the benchmark failed).
        roofline_pct: that spec's % of the datasheet roofline (None when the problem gives no bytes/flops).
        expected: what upstream says of an imported solution (``correct``/``wrong``), '' otherwise.
        cached: the result was stored before this ``ktui eval`` (not run again).
        reason: the failed rung's summary, '' when none failed.
        eager_speedup: the worst spec's speedup over torch eager (None: not timed).
        compile_speedup: over ``torch.compile`` of the reference (None: not timed, or it did not compile).
        compile_error: why there is no compiled baseline ('' when there is one, or nothing was timed).
        upstream: the upstream checker's verdict (``pass``, ``fail``, ``error``, ``n/a``; '' when the problem has
            none, or correctness did not run).
        upstream_message: its first failing case's message.
        differs: ``upstream: pass, ktui: fail (dtype)`` where the upstream checker and ktui disagree, else ''.
        ran_on: where an engine ran it (``results.placement_label``: host, GPU and its UUID), '' on the local pool.
        needs_gpu: it was not run here because it needs a GPU this machine lacks (``◌ needs a GPU``: compiled and
            dumped only): ``ok`` (not failed) but not ``correct``.
    """

    problem: str
    version: str
    verdict: str
    ok: bool
    correct: bool
    speedup: float | None
    roofline_pct: float | None
    expected: str
    cached: bool
    reason: str
    device: str
    eager_speedup: float | None = None
    compile_speedup: float | None = None
    compile_error: str = ""
    upstream: str = ""
    upstream_message: str = ""
    differs: str = ""
    ran_on: str = ""
    needs_gpu: bool = False


class EvalJson(TypedDict):
    """The evaluation (``ktui eval --json``'s data).

    Attributes:
        device: the device's name (``cpu (interpreter)`` or the GPU's).
        timed: the device times kernels (false on the CPU: no speedup, no fast_p).
        p: fast_p's speedup threshold.
        fast_p: the fraction of rows correct and faster than the reference by more than ``p``; null when nothing
            was timed.
        geomean_speedup: the geometric mean speedup of the correct rows that have one; null when none has.
        fast_p_eager: fast_p over torch eager instead of the reference; null when nothing was timed.
        geomean_eager: the geometric mean speedup over torch eager.
        fast_p_compile: fast_p over ``torch.compile`` of the reference, over ``compiled_rows``.
        geomean_compile: the geometric mean speedup over ``torch.compile``.
        compiled_rows: the rows that have a compiled baseline (the reference compiled).
        not_run: versions left for a later ``ktui eval`` (``--budget`` ran out): they have no row.
        correct: how many rows passed correctness.
        needs_gpu: how many rows were not run here because they need a GPU (neither correct nor failed).
        total: how many rows.
        rows: one per version evaluated.
    """

    device: str
    timed: bool
    p: float
    fast_p: float | None
    geomean_speedup: float | None
    fast_p_eager: float | None
    geomean_eager: float | None
    fast_p_compile: float | None
    geomean_compile: float | None
    compiled_rows: int
    not_run: list[str]
    correct: int
    needs_gpu: int
    total: int
    rows: list[Row]


@dataclass
class Table:
    """The whole evaluation: rows, the device, ``p``, ``fast_p`` and the geometric mean speedup over the reference,
    the same over torch eager (``*_eager``) and over torch.compile (``*_compile``, over the ``compiled_rows`` that
    have a compiled baseline); all None on the CPU."""

    rows: list[Row]
    device: str
    timed: bool
    p: float
    fast_p: float | None
    geomean_speedup: float | None
    correct: int
    fast_p_eager: float | None = None
    geomean_eager: float | None = None
    fast_p_compile: float | None = None
    geomean_compile: float | None = None
    compiled_rows: int = 0
    not_run: list[str] = field(default_factory=list)  # versions left for a later eval (``deadline``): no row

    def to_json(self) -> EvalJson:
        """``ktui eval --json``'s data (rows as ``dataclasses.asdict`` writes them: ``ktui.core.envelope.jsonable``)."""
        return {
            "device": self.device,
            "timed": self.timed,
            "p": self.p,
            "fast_p": self.fast_p,
            "geomean_speedup": self.geomean_speedup,
            "fast_p_eager": self.fast_p_eager,
            "geomean_eager": self.geomean_eager,
            "fast_p_compile": self.fast_p_compile,
            "geomean_compile": self.geomean_compile,
            "compiled_rows": self.compiled_rows,
            "not_run": self.not_run,
            "correct": self.correct,
            "needs_gpu": sum(1 for r in self.rows if r.needs_gpu),
            "total": len(self.rows),
            "rows": self.rows,
        }


TIMED_ON_GPU = ("benchmark", "profile", "trace")  # rungs that time or profile calls: on the CPU, only a skip


def fresh(
    ws: Workspace, kernel: KernelRef, result: LadderResult | None, device_type: str, rungs: tuple[str, ...] = ()
) -> bool:
    """Whether a stored ``result`` of ``kernel`` stands for its files now, on this kind of device, with a verdict,
    with each of ``rungs`` (unless a failed compile, run or correctness stopped its ladder before them: eval's
    ladders stop at a wrong verdict, ``LadderOptions.stop_when_wrong``; on the CPU those of ``TIMED_ON_GPU``
    excepted) and, where its benchmark passed, with the torch baselines (``has_baselines``)."""
    if result is None or result.device.get("type") != device_type or staleness(ws, kernel, result):
        return False
    failed = result.failed_rung
    if failed is None and result.rung("correctness") is None:
        return False
    if device_type != "cuda":  # without a GPU these only say why they are skipped: a result without them stands
        rungs = tuple(name for name in rungs if name not in TIMED_ON_GPU)
    if not (failed is not None and failed.name in ("compile", "run", "correctness")):
        if any(result.rung(name) is None for name in rungs):
            return False
    return has_baselines(result)


def has_baselines(result: LadderResult) -> bool:
    """False only for a result whose benchmark passed without the torch eager and torch.compile baselines (a plain
    ``ktui run``): ``ktui eval`` runs it again with them."""
    bench = result.rung("benchmark")
    if bench is None or bench.status is not Status.OK:
        return True
    specs = bench.figures.get("specs", [])
    return all("eager_median_us" in s and ("compiled_median_us" in s or "compile_error" in s) for s in specs)


def worst(result: LadderResult, key: str) -> float | None:
    """The smallest ``key`` (``eager_speedup``, ``compile_speedup``) among the benchmark specs of a passed
    benchmark; None when it did not pass or no spec has one."""
    bench = result.rung("benchmark")
    if bench is None or bench.status is not Status.OK:
        return None
    values = [s[key] for s in bench.figures.get("specs", []) if s.get(key)]
    return min(values) if values else None


def best_version(ws: Workspace, problem: str, store: ResultStore, device_type: str) -> KernelRef | None:
    """The version ``ktui eval`` runs for ``problem`` without ``--all-versions`` (see the module's docstring)."""
    versions = ws.versions(problem)
    if not versions:
        return None
    scored = []
    for i, k in enumerate(versions):
        r = store.load(k.problem, k.version)
        if fresh(ws, k, r, device_type) and r is not None and r.ok:
            scored.append((standing(r), r.worst_speedup or 0.0, i, k))
    if scored:  # verified before not verified here (needs a GPU), then the fastest, then the newest
        return max(scored, key=lambda t: t[:3])[3]
    return versions[-1]


def row_of(result: LadderResult, kernel: KernelRef, cached: bool) -> Row:
    """The table's row for one result."""
    corr = result.rung("correctness")
    bench = result.rung("benchmark")
    speedup = result.worst_speedup
    pct = None
    if speedup is not None and bench is not None:
        specs = [s for s in bench.figures.get("specs", []) if s.get("speedup") == speedup]
        pct = specs[0].get("sol_pct") if specs else None
    failed = result.failed_rung
    try:
        sol = solution_of(kernel.path.read_text(encoding="utf-8"))
    except OSError:
        sol = None
    errors = [s["compile_error"] for s in (bench.figures.get("specs", []) if bench else []) if s.get("compile_error")]
    up = corr.figures.get("upstream") if corr is not None else None
    kind = upstream.failure_kind(failed.name, _reason(failed)) if failed is not None else ""
    return Row(
        problem=kernel.problem,
        version=kernel.version,
        verdict=report.verdict(result)[0],
        ok=result.ok,
        correct=bool(corr is not None and corr.ok and corr.status.value == "ok"),
        speedup=speedup,
        roofline_pct=pct,
        expected=sol[1] if sol else "",
        cached=cached,
        reason=_reason(failed),
        device=str(result.device.get("type", "")),
        eager_speedup=worst(result, "eager_speedup"),
        compile_speedup=worst(result, "compile_speedup"),
        compile_error=errors[0] if errors else "",
        upstream=str(up["verdict"]) if up else "",
        upstream_message=str(up.get("message", "")) if up else "",
        differs=upstream.differs(str(up["verdict"]), result.ok, kind) if up else "",
        ran_on=placement_label(result.device),
        needs_gpu=result.ok and result.needs_gpu,
    )


def _reason(failed: RungResult | None) -> str:
    """A failed rung's reason in one line (its summary, else its error), at most 160 characters."""
    if failed is None:
        return ""
    text = failed.summary or (failed.error.one_line() if failed.error else "")
    return (text.splitlines() or [""])[0][:160]


def fast_and_geomean(rows: list[Row], speedups: list[float | None], p: float) -> tuple[float | None, float | None]:
    """KernelBench's ``fast_p`` (the fraction of ``rows`` correct and faster than ``p``) and the geometric mean of
    the correct rows' speedups (``speedups``, one per row; None: not timed); (None, None) for no rows."""
    if not rows:
        return None, None
    good = [s for r, s in zip(rows, speedups) if r.ok and r.correct and s is not None and s > 0]
    fast = sum(1 for s in good if s > p) / len(rows)
    geo = math.exp(sum(math.log(s) for s in good) / len(good)) if good else None
    return fast, geo


def summarize(rows: list[Row], p: float, device: str, timed: bool) -> Table:
    """``fast_p`` and the geometric mean speedup of ``rows`` over each baseline (KernelBench's definitions; None
    when not timed). The torch.compile figures count only the rows whose reference compiled (a row with a
    ``compile_error`` has no baseline to be faster than)."""
    correct = [r for r in rows if r.ok and r.correct]
    table = Table(rows, device, timed, p, None, None, len(correct))
    if timed and rows:
        table.fast_p, table.geomean_speedup = fast_and_geomean(rows, [r.speedup for r in rows], p)
        table.fast_p_eager, table.geomean_eager = fast_and_geomean(rows, [r.eager_speedup for r in rows], p)
        compiled = [r for r in rows if not r.compile_error]
        table.compiled_rows = len(compiled)
        table.fast_p_compile, table.geomean_compile = fast_and_geomean(
            compiled, [r.compile_speedup for r in compiled], p
        )
    return table


def evaluate(
    ws: Workspace,
    problems: list[str],
    start: Callable[[], Any],
    device_type: str,
    all_versions: bool = False,
    rerun: bool = False,
    p: float = 1.0,
    say: Callable[[str], None] = lambda line: None,
    rungs: tuple[str, ...] = (),
    deadline: float | None = None,
) -> Table:
    """Run (or reuse) every selected version's ladder and summarize.

    ``start()`` returns a started ``core.Session`` (called once, and only when something must run); its
    ``device_info()["type"]`` must be ``device_type``. The versions to run go to it together
    (``Session.results_for``): with the Ray engine they run in parallel, each on its own GPU. ``say`` gets a line
    per version when it starts and when it ends, in the order they end. A stored result is reused only when it has
    each of ``rungs`` (the session's; ``fresh``). With ``deadline`` (``time.monotonic()``) the versions go one at a
    time and none starts past it: those left are listed in ``Table.not_run`` (a later eval resumes with them).

    Raises:
        ValueError: a problem that the workspace does not have.
    """
    known = ws.problems()
    unknown = [x for x in problems if x not in known]
    if unknown:
        raise ValueError(f"no problem {', '.join(unknown)} in {ws.root} (problems: {', '.join(known) or 'none'})")
    store = ResultStore(ws)
    todo: list[KernelRef] = []
    missing: list[str] = []  # problems with no version: rows that count against fast_p, as KernelBench counts them
    for prob in problems or known:
        if all_versions:
            todo += ws.versions(prob)
        else:
            best = best_version(ws, prob, store, device_type)
            if best is not None:
                todo.append(best)
            else:
                say(f"{prob}: no version")
                missing.append(prob)
    rows: list[Row] = [
        Row(prob, "-", "· no version", False, False, None, None, "", False, "no version to run", device_type)
        for prob in missing
    ]
    done: dict[str, Row] = {}
    to_run: list[tuple[KernelRef, str]] = []  # (version, why it runs again)
    number = {k.key: n for n, k in enumerate(todo, 1)}
    for kernel in todo:
        stored = store.load(kernel.problem, kernel.version)
        if not rerun and stored is not None and fresh(ws, kernel, stored, device_type, rungs):
            done[kernel.key] = row_of(stored, kernel, cached=True)
            say(f"[{number[kernel.key]}/{len(todo)}] {kernel.key}: {done[kernel.key].verdict} (stored result)")
        else:
            why = " (the stored result has no torch baselines)" if stored and not has_baselines(stored) else ""
            to_run.append((kernel, why))
    not_run: list[str] = []
    session = None  # started for the first version that runs (never when none does)
    # all at once (the Ray engine runs them in parallel); one at a time when a deadline may stop the rest
    groups = [[x] for x in to_run] if deadline is not None else [to_run] if to_run else []
    for group in groups:
        if deadline is not None and time.monotonic() > deadline:
            not_run += [kernel.key for kernel, _ in group]
            continue
        if session is None:
            session = start()
        for kernel, why in group:
            say(f"[{number[kernel.key]}/{len(todo)}] {kernel.key}: running{why}")
        for kernel, result in session.results_for([kernel for kernel, _ in group]):
            ran = result if is_broken(result) else store.load(kernel.problem, kernel.version) or result
            row = done[kernel.key] = row_of(ran, kernel, cached=False)
            corr = ran.rung("correctness")
            seed = corr.figures.get("seed") if corr is not None else None
            say(
                f"[{number[kernel.key]}/{len(todo)}] {kernel.key}: {row.verdict}"
                + (f" ({row.reason})" if row.reason else "")
                # how to draw its cases again, on it or on another version (new-user trial 32, F1: a failing case
                # of v3 could not be replayed on v4)
                + (f" [seed {seed}: ktui eval --seed {seed} draws these cases again]" if isinstance(seed, int) else "")
            )
    for kernel in todo:
        if kernel.key in not_run:
            continue
        rows.append(
            done.get(kernel.key)
            or Row(
                kernel.problem,
                kernel.version,
                "· not run",
                False,
                False,
                None,
                None,
                "",
                False,
                "no result: the run was cancelled or the file deleted",
                device_type,
            )
        )
    table = summarize(rows, p, device_type, timed=device_type == "cuda")
    table.not_run = not_run
    return table


NEEDS_GPU = "needs a GPU"


def _speedup(value: float | None, timed: bool, missing: str = "-") -> str:
    if not timed:
        return NEEDS_GPU
    return f"{value:.2f}x" if value is not None else missing


NOTE_WIDTH = 100  # the note column's width in the table (``--json`` keeps the reason; ktui run shows it all)


def short_note(text: str, width: int = NOTE_WIDTH) -> str:
    """``text`` cut to ``width`` characters at a word boundary, with `` …`` where it was cut (new-user trial 20 L12:
    a 200-character note cut mid-token wrapped every row of a 120-column terminal)."""
    if len(text) <= width:
        return text
    head = text[: width - 2]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip(" ;,:") + " …"


def render(table: Table) -> list[str]:
    """The table as lines: one per version, then the summary. On the CPU each timed column says "needs a GPU";
    where the upstream checker and ktui disagree, the note says so first."""
    has_expected = any(r.expected for r in table.rows)
    has_upstream = any(r.upstream for r in table.rows)
    has_place = any(r.ran_on for r in table.rows)
    head = ["version", "verdict", "vs ref", "vs eager", "vs compile", "roofline"]
    head += (["upstream label"] if has_expected else []) + (["upstream check"] if has_upstream else [])
    head += (["ran on"] if has_place else []) + ["note"]
    body = []
    for r in table.rows:
        cells = [
            f"{r.problem}/{r.version}",
            r.verdict,
            _speedup(r.speedup, table.timed),
            _speedup(r.eager_speedup, table.timed),
            _speedup(r.compile_speedup, table.timed, "no compile" if r.compile_error else "-"),
            f"{r.roofline_pct:.0f}%" if r.roofline_pct is not None else (NEEDS_GPU if not table.timed else "-"),
        ]
        if has_expected:
            cells.append(r.expected or "-")
        if has_upstream:
            cells.append(r.upstream or "-")
        if has_place:
            cells.append(r.ran_on or "-")
        notes = [r.differs, "stored" if r.cached else "", r.reason]
        if r.compile_error:
            notes.append(f"torch.compile failed: {r.compile_error[:80]}")
        cells.append(short_note("; ".join(x for x in notes if x)))
        body.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in body)) if body else len(h) for i, h in enumerate(head)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    lines = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(c) for c in body]
    lines.append("")
    gpu = sum(1 for r in table.rows if r.needs_gpu)
    unverified = f" ({gpu} not run here: {'it needs' if gpu == 1 else 'they need'} a GPU)" if gpu else ""
    lines.append(f"correct: {table.correct}/{len(table.rows)}{unverified}  device: {table.device or '?'}")
    if table.timed:

        def pair(fast: float | None, geo: float | None) -> str:
            return (f"{fast:.2f}" if fast is not None else "-") + " / " + (f"{geo:.2f}x" if geo is not None else "-")

        lines.append(
            f"fast_{table.p:g} / geomean speedup (correct, timed): vs ref {pair(table.fast_p, table.geomean_speedup)}"
            f"  vs torch eager {pair(table.fast_p_eager, table.geomean_eager)}"
            f"  vs torch.compile {pair(table.fast_p_compile, table.geomean_compile)}"
            + (
                f" (over the {table.compiled_rows} of {len(table.rows)} rows whose reference compiled)"
                if table.compiled_rows != len(table.rows)
                else ""
            )
        )
    else:
        lines.append(
            f"fast_{table.p:g}: n/a  geomean speedup: n/a (not timed on the CPU, the Triton interpreter: speedups "
            "over the reference, torch eager and torch.compile need a GPU)"
        )
    if has_expected:
        agree = sum(1 for r in table.rows if r.expected in ("correct", "wrong") and (r.expected == "correct") == r.ok)
        total = sum(1 for r in table.rows if r.expected in ("correct", "wrong"))
        lines.append(f"upstream's correct/wrong labels agreed with ktui's verdict on {agree}/{total}")
    if table.not_run:
        lines.append(
            f"not run (the budget was spent): {len(table.not_run)} version(s), {', '.join(table.not_run[:6])}"
            + (" ..." if len(table.not_run) > 6 else "")
            + ": run ktui eval again to go on (stored results are reused)"
        )
    if has_upstream:
        judged = [r for r in table.rows if r.upstream in ("pass", "fail", "error")]
        differ = [r for r in judged if r.differs]
        lines.append(
            f"upstream check_implementation agreed with ktui's verdict on {len(judged) - len(differ)}/{len(judged)}"
            + "".join(f"\n  {r.problem}/{r.version}: {r.differs}" for r in differ)
        )
    return lines


def workspace_of(path: Path) -> Workspace:
    """The workspace at or above ``path`` (``core.workspace.Workspace.find``)."""
    return Workspace.find(path)
