"""The panels of the main screen. Each draws from ``VersionState``s; none runs anything.

The tabs that look inside a version (SASS, Diff, Profile) are in ``ktui.tui.inside``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static, Tree
from textual.widgets.tree import TreeNode

from ktui.core.figures import CorrectnessSpec, benchmark_of, correctness_of
from ktui.core.results import LadderResult, Status, fmt
from ktui.core.workspace import KernelRef, Workspace
from ktui.tui.state import VersionState, problem_badge, rung_names

STATUS_STYLE = {
    "ok": "bold green",
    "FAILED": "bold red",
    "failed": "bold red",
    "skipped": "dim",
    "running": "bold yellow",
    "waiting": "yellow",
    "stale": "dim italic",
    "-": "dim",
}


class KernelTree(Tree[str | KernelRef]):
    """Problems and their versions, each version with its latest verdict (a problem's node holds its name, a
    version's its ``KernelRef``)."""

    def __init__(self, workspace: Workspace, **kw: Any):
        super().__init__("kernels", **kw)
        self.ws = workspace
        self.show_root = False
        self.guide_depth = 2
        self._leaves: dict[str, TreeNode[str | KernelRef]] = {}
        self._problems: dict[str, TreeNode[str | KernelRef]] = {}
        self._states: dict[str, VersionState] = {}

    def _problem_label(self, name: str) -> Text:
        """The problem's name, with ``! reference error`` when its reference failed (``state.problem_badge``)."""
        badge = problem_badge([st for key, st in self._states.items() if key.split("/", 1)[0] == name])
        return Text.assemble((name, "bold"), ("  " + badge[0], badge[1]) if badge else "")

    def problem_label_of(self, name: str) -> str:
        """The plain text of a problem's row, or ``""`` when the tree has no such problem."""
        node = self._problems.get(name)
        return str(node.label) if node is not None else ""

    def rebuild(self, states: dict[str, VersionState]) -> None:
        """Add problems and versions that appeared on disk and drop those that went (keeping the cursor)."""
        self._states = states
        problems = self.ws.problems()
        for name in problems:
            if name not in self._problems:
                self._problems[name] = self.root.add(self._problem_label(name), data=name, expand=True)
            else:
                self._problems[name].set_label(self._problem_label(name))
        for name in list(self._problems):
            if name not in problems:
                self._problems.pop(name).remove()
        for name, node in self._problems.items():
            versions = self.ws.versions(name)
            keys = [k.key for k in versions]
            current = [c.data.key for c in node.children if isinstance(c.data, KernelRef)]
            if current == keys:
                continue
            for child in list(node.children):
                if isinstance(child.data, KernelRef):
                    self._leaves.pop(child.data.key, None)
                    child.remove()
            for k in versions:
                self._leaves[k.key] = node.add_leaf(self._label(k, states.get(k.key)), data=k)

    def _label(self, k: KernelRef, state: VersionState | None) -> Text:
        text, style = state.badge() if state else ("· not run", "dim")
        return Text.assemble((f"{k.version:<4} ", ""), (text, style))

    def update_version(self, k: KernelRef, state: VersionState) -> None:
        node = self._leaves.get(k.key)
        if node is not None:
            node.set_label(self._label(k, state))
        problem = self._problems.get(k.problem)
        if problem is not None:
            problem.set_label(self._problem_label(k.problem))

    def label_of(self, key: str) -> str:
        """The plain text of a version's row (``"v1   ✓ 1.00x"``), or ``""`` when the tree has no such row."""
        node = self._leaves.get(key)
        return str(node.label) if node is not None else ""  # (the label is a Text: str() is its plain text)

    def select_key(self, key: str) -> None:
        node = self._leaves.get(key)
        if node is not None:
            self.move_cursor(node)

    def version_keys(self) -> list[str]:
        """The versions in the order the tree shows them."""
        return [c.data.key for p in self.root.children for c in p.children if isinstance(c.data, KernelRef)]

    def step(self, key: str | None, delta: int) -> str | None:
        """The version ``delta`` rows after ``key`` (wrapping; from the ends when ``key`` is not shown)."""
        keys = self.version_keys()
        if not keys:
            return None
        i = keys.index(key) if key in keys else -delta if delta > 0 else 0
        return keys[(i + delta) % len(keys)]


class LadderTable(DataTable[str | Text]):
    """The rungs of the selected version: status, time, figures in one line. The running rung's status is its
    progress (``37/106``) once its worker reports some, and its figures the progress detail; its time is the
    seconds it has run so far (``12s``), and its figures say its time limit until progress comes."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("rung", key="rung", width=12)
        self.add_column("status", key="status", width=8)
        self.add_column("time", key="time", width=7)
        self.add_column("figures", key="figures")

    def show(self, state: VersionState | None, elapsed: float | None = None, limit: float | None = None) -> None:
        """Draw ``state``'s rungs; ``elapsed`` (seconds) and ``limit`` (seconds, the running rung's time limit)
        belong to the rung under way, when known."""
        names = rung_names(state)
        if [str(k.value) for k in self.rows] != list(names):
            self.clear()
            for n in names:
                self.add_row(n, "", "", "", key=n)
        for n in names:
            st, r = state.rung(n) if state else ("-", None)
            progress = state.progress_text() if state and st == "running" else ""
            self.update_cell(n, "status", Text(progress or st, style=STATUS_STYLE.get(st, "")))
            running = st == "running" and elapsed is not None
            self.update_cell(n, "time", f"{r.seconds:.2f}s" if r else f"{elapsed:.0f}s" if running else "")
            line = r.summary or (r.error.one_line() if r and r.error else "") if r else ""
            if progress and state and state.progress:
                line = state.progress[2]
            elif running and not line and limit:
                line = f"running, limit {limit:g} s per call"
            figures = Text(line, style="red" if r and r.status is Status.FAILED else "")
            if r and r.warnings:
                figures = Text.assemble((f"⚠{len(r.warnings)} ", "bold yellow"), figures)
            self.update_cell(n, "figures", figures, update_width=True)


ACC_COLUMNS = (
    ("spec", None),
    ("ok", 4),
    ("max_abs", 8),
    ("max_rel", 8),
    ("psnr_db", 7),
    ("cosine", 9),
    ("mse", 8),
    ("rmse", 8),
    ("nan/inf", 7),
    ("unwritten", 9),
    ("worst at", 12),
)


class AccuracyTable(DataTable[str | Text]):
    """Per test spec, the worst seed's accuracy figures."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name, width in ACC_COLUMNS:
            self.add_column(name, key=name, width=width)

    def show(self, result: LadderResult | None) -> None:
        rung = result.rung("correctness") if result else None
        specs = correctness_of(rung.figures).get("specs", []) if rung else []
        labels = [s["label"] for s in specs]
        if [str(k.value) for k in self.rows] != labels:
            self.clear()
            for s in specs:
                self.add_row(*self._cells(s), key=s["label"])
            return
        for s in specs:
            for (name, _), cell in zip(ACC_COLUMNS, self._cells(s)):
                self.update_cell(s["label"], name, cell, update_width=True)

    @staticmethod
    def _cells(s: CorrectnessSpec) -> list[Any]:
        ok = Text("ok", "green") if s.get("ok") else Text("FAIL", "bold red")
        nan_inf = f"{s.get('nan_count') or 0}/{s.get('inf_count') or 0}"
        where = str(s.get("worst_index")) if s.get("worst_index") is not None else "-"
        return [
            s["label"],
            ok,
            fmt(s.get("max_abs_err")),
            fmt(s.get("max_rel_err")),
            fmt(s.get("psnr_db")),
            fmt(s.get("cosine"), 7),
            fmt(s.get("mse")),
            fmt(s.get("rmse")),
            nan_inf,
            str(s.get("unwritten") or 0),
            where,
        ]


TIME_COLUMNS = (
    ("version", 8),
    ("spec", None),
    ("median us", 10),
    ("IQR us", 8),
    ("ref us", 10),
    ("speedup", 8),
    ("GB/s", 7),
    ("TFLOP/s", 8),
    ("% SOL", 6),
    ("verdict", 12),
)


class TimingsTable(DataTable[str | Text]):
    """Every version of the selected problem: benchmark medians against the reference."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name, width in TIME_COLUMNS:
            self.add_column(name, key=name, width=width)
        self._problem: str | None = None

    def show(self, problem: str | None, states: list[tuple[KernelRef, VersionState]]) -> None:
        rows: list[tuple[str, list[Any]]] = []
        for k, st in states:
            rows.extend(self._rows(k, st))
        keys = [key for key, _ in rows]
        if problem != self._problem or [str(r.value) for r in self.rows] != keys:
            self._problem = problem
            self.clear()
            for key, cells in rows:
                self.add_row(*cells, key=key)
            return
        for key, cells in rows:
            for (name, _), cell in zip(TIME_COLUMNS, cells):
                self.update_cell(key, name, cell, update_width=True)

    @staticmethod
    def _rows(k: KernelRef, st: VersionState) -> list[tuple[str, list[Any]]]:
        res = st.result
        bench = res.rung("benchmark") if res else None
        verdict_text, style = st.badge()
        verdict = Text(verdict_text, style)
        if bench is None or bench.status is not Status.OK:
            note = "no GPU timing" if bench and bench.status is Status.SKIPPED else "-"
            return [(k.version, [k.version, note, "-", "-", "-", "-", "-", "-", "-", verdict])]
        out = []
        for s in benchmark_of(bench.figures).get("specs", []):
            out.append(
                (
                    f"{k.version}:{s['label']}",
                    [
                        k.version,
                        s["label"],
                        fmt(s.get("median_us"), 4),
                        fmt(s.get("iqr_us"), 2),
                        fmt(s.get("ref_median_us"), 4),
                        Text(f"{sp:.2f}x", "bold green" if sp >= 1 else "yellow") if (sp := s.get("speedup")) else "-",
                        f"{s['gbps']:.0f}" if s.get("gbps") is not None else "-",
                        f"{s['tflops']:.1f}" if s.get("tflops") is not None else "-",
                        f"{s['sol_pct']:.0f}" if s.get("sol_pct") is not None else "-",
                        verdict,
                    ],
                )
            )
        return out or [(k.version, [k.version, "-", "-", "-", "-", "-", "-", "-", "-", verdict])]


def details_text(k: KernelRef | None, st: VersionState | None) -> Text:
    """The Details tab: device, source hash, compile launches, warnings, and the failure with its traceback."""
    if k is None:
        return Text("Select a version in the tree.", style="dim")
    from ktui.core import report

    t = Text()
    for text, style in report.details(k, st.result if st else None, st.stale if st else ""):
        t.append(text, style=style or None)
    return t


class QueuePanel(Static):
    """What runs now (the version, then its rung and progress), what waits; the workers' states in the border."""

    def render_state(
        self,
        running: str | None,
        rung: str | None,
        waiting: tuple[str, ...],
        workers: dict[str, str],
        progress: str = "",
        elapsed: str = "",
    ) -> None:
        """``running`` on ``rung`` (with its ``progress``, ``37/106``, and the rung's ``elapsed`` time and limit,
        ``12s/30s``), the versions ``waiting``, the workers."""
        t = Text()
        if running:
            t.append("▶ ", "bold yellow")
            t.append(running, "bold")
            t.append(f"  {elapsed}\n" if elapsed else "\n", "yellow")
            t.append(f"  {rung or 'starting'}{' ' + progress if progress else ''}\n")
        else:
            t.append("idle\n", "dim")
        t.append(f"waiting: {', '.join(waiting)}\n" if waiting else "nothing waiting\n", "yellow" if waiting else "dim")
        self.update(t)
        self.border_subtitle = " ".join(
            f"[dim]{role[:4]}[/] [{WORKER_MARK.get(state, ('?', 'dim'))[1]}]"
            f"{WORKER_MARK.get(state, ('?', 'dim'))[0]}[/]"
            for role, state in sorted(workers.items())
        )


WORKER_MARK = {
    "ready": ("✓", "green"),
    "starting": ("…", "yellow"),
    "restarting": ("↻", "bold yellow"),
    "failed": ("✗", "bold red"),
    "stopped": ("-", "dim"),
}
