"""``ktui eval``: the ladder over a set of problems, and one table.

For each problem (all of the workspace's by default) the best version, or every version with ``all_versions``,
goes through the same ``core.Session`` ladder as ``ktui run``. A stored result (``.ktui/results/``) is reused when
it ran on the same kind of device and neither the version's source nor the reference changed since
(``core.status.staleness``): an interrupted ``ktui eval`` resumes where it stopped, and a second one runs nothing.

The best version of a problem is, among its fresh stored results on this kind of device, the one that passed with the
highest worst-spec speedup (else the newest that passed); with no fresh result, its newest version.

Figures (KernelBench's, ``scripts/benchmark_eval_analysis.py``): ``fast_p`` is the fraction of the rows that are
correct (every rung passed) *and* faster than the reference by more than ``p`` (speedup = reference median /
version median, the worst benchmark spec); the geometric mean speedup is over the correct rows with a speedup. A
time the benchmark rung reports as impossible (under the roofline floor) fails that rung, so it is never a speedup
and never enters a mean. On the CPU nothing is timed (the Triton interpreter): both are ``None`` and the table says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ktui.core import report
from ktui.core.results import LadderResult, RungResult, placement_label
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
        ran_on: where an engine ran it (``results.placement_label``: host, GPU and its UUID), '' on the local pool.
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
    ran_on: str = ""


@dataclass
class Table:
    """The whole evaluation: rows, the device, ``p``, ``fast_p`` and the geometric mean speedup (None on the CPU)."""

    rows: list[Row]
    device: str
    timed: bool
    p: float
    fast_p: float | None
    geomean_speedup: float | None
    correct: int

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "timed": self.timed,
            "p": self.p,
            "fast_p": self.fast_p,
            "geomean_speedup": self.geomean_speedup,
            "correct": self.correct,
            "total": len(self.rows),
            "rows": [asdict(r) for r in self.rows],
        }


def fresh(ws: Workspace, kernel: KernelRef, result: LadderResult | None, device_type: str) -> bool:
    """Whether a stored ``result`` of ``kernel`` stands for its files now, on this kind of device, with a verdict."""
    if result is None or result.device.get("type") != device_type or staleness(ws, kernel, result):
        return False
    return result.failed_rung is not None or result.rung("correctness") is not None


def best_version(ws: Workspace, problem: str, store: ResultStore, device_type: str) -> KernelRef | None:
    """The version ``ktui eval`` runs for ``problem`` without ``--all-versions`` (see the module's docstring)."""
    versions = ws.versions(problem)
    if not versions:
        return None
    scored = []
    for k in versions:
        r = store.load(k.problem, k.version)
        if fresh(ws, k, r, device_type) and r is not None and r.ok:
            scored.append((r.worst_speedup or 0.0, versions.index(k), k))
    if scored:
        return max(scored, key=lambda t: (t[0], t[1]))[2]
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
        ran_on=placement_label(result.device),
    )


def _reason(failed: RungResult | None) -> str:
    """A failed rung's reason in one line (its summary, else its error), at most 160 characters."""
    if failed is None:
        return ""
    text = failed.summary or (failed.error.one_line() if failed.error else "")
    return (text.splitlines() or [""])[0][:160]


def summarize(rows: list[Row], p: float, device: str, timed: bool) -> Table:
    """``fast_p`` and the geometric mean speedup of ``rows`` (KernelBench's definitions; None when not timed)."""
    correct = [r for r in rows if r.ok and r.correct]
    fast = geo = None
    if timed and rows:
        fast = sum(1 for r in correct if r.speedup is not None and r.speedup > p) / len(rows)
        sp = [r.speedup for r in correct if r.speedup is not None and r.speedup > 0]
        geo = math.exp(sum(math.log(s) for s in sp) / len(sp)) if sp else None
    return Table(rows, device, timed, p, fast, geo, len(correct))


def evaluate(
    ws: Workspace,
    problems: list[str],
    start: Callable[[], Any],
    device_type: str,
    all_versions: bool = False,
    rerun: bool = False,
    p: float = 1.0,
    say: Callable[[str], None] = lambda line: None,
) -> Table:
    """Run (or reuse) every selected version's ladder and summarize.

    ``start()`` returns a started ``core.Session`` (called once, and only when something must run); its
    ``device_info()["type"]`` must be ``device_type``. The versions to run go to it together
    (``Session.results_for``): with the Ray engine they run in parallel, each on its own GPU. ``say`` gets a line
    per version when it starts and when it ends, in the order they end.

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
    to_run: list[KernelRef] = []
    number = {k.key: n for n, k in enumerate(todo, 1)}
    for kernel in todo:
        stored = store.load(kernel.problem, kernel.version)
        if not rerun and stored is not None and fresh(ws, kernel, stored, device_type):
            done[kernel.key] = row_of(stored, kernel, cached=True)
            say(f"[{number[kernel.key]}/{len(todo)}] {kernel.key}: {done[kernel.key].verdict} (stored result)")
        else:
            to_run.append(kernel)
    if to_run:
        session = start()
        for kernel in to_run:
            say(f"[{number[kernel.key]}/{len(todo)}] {kernel.key}: running")
        for kernel, result in session.results_for(to_run):
            ran = result if is_broken(result) else store.load(kernel.problem, kernel.version) or result
            row = done[kernel.key] = row_of(ran, kernel, cached=False)
            say(
                f"[{number[kernel.key]}/{len(todo)}] {kernel.key}: {row.verdict}"
                + (f" ({row.reason})" if row.reason else "")
            )
    for kernel in todo:
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
    return summarize(rows, p, device_type, timed=device_type == "cuda")


def render(table: Table) -> list[str]:
    """The table as lines: one per version, then the summary."""
    has_expected = any(r.expected for r in table.rows)
    has_place = any(r.ran_on for r in table.rows)
    head = ["version", "verdict", "speedup", "roofline"] + (["upstream"] if has_expected else [])
    head += (["ran on"] if has_place else []) + ["note"]
    body = []
    for r in table.rows:
        cells = [
            f"{r.problem}/{r.version}",
            r.verdict,
            f"{r.speedup:.2f}x" if r.speedup is not None else "-",
            f"{r.roofline_pct:.0f}%" if r.roofline_pct is not None else "-",
        ]
        if has_expected:
            cells.append(r.expected or "-")
        if has_place:
            cells.append(r.ran_on or "-")
        cells.append("; ".join(x for x in ("stored" if r.cached else "", r.reason) if x))
        body.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in body)) if body else len(h) for i, h in enumerate(head)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    lines = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(c) for c in body]
    lines.append("")
    lines.append(f"correct: {table.correct}/{len(table.rows)}  device: {table.device or '?'}")
    if table.timed:
        fp = f"{table.fast_p:.2f}" if table.fast_p is not None else "-"
        gm = f"{table.geomean_speedup:.2f}x" if table.geomean_speedup is not None else "-"
        lines.append(f"fast_{table.p:g}: {fp}  geomean speedup (correct, timed): {gm}")
    else:
        lines.append(f"fast_{table.p:g}: n/a  geomean speedup: n/a (not timed on the CPU: the Triton interpreter)")
    if has_expected:
        agree = sum(1 for r in table.rows if r.expected in ("correct", "wrong") and (r.expected == "correct") == r.ok)
        total = sum(1 for r in table.rows if r.expected in ("correct", "wrong"))
        lines.append(f"upstream's correct/wrong labels agreed with ktui's verdict on {agree}/{total}")
    return lines


def workspace_of(path: Path) -> Workspace:
    """The workspace at or above ``path`` (``core.workspace.Workspace.find``)."""
    return Workspace.find(path)
