"""The panels of the main screen. Each draws from ``VersionState``s; none runs anything.

The tabs that look inside a version (SASS, Diff, Profile) are in ``ktui.tui.inside``.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget
from textual.widgets import DataTable, Static, Tree
from textual.widgets.tree import TreeNode

from ktui.core.figures import CorrectnessSpec, benchmark_of, correctness_of
from ktui.core.results import RUNG_ORDER, LadderResult, RungResult, Status, fmt, fmt_fit, fmt_seconds
from ktui.core.store import Baselines
from ktui.core.workspace import KernelRef, Workspace
from ktui.tui.state import VersionState, problem_badge, rung_names

BASE_MARK = "⌖ base "
"""What the tree puts between the version and its verdict on a problem's pinned baseline (the version Diff and
Profile compare with): before the verdict, so that a narrow tree cuts the verdict's end, not the mark."""

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
        self._baselines: dict[str, str] = {}  # problem -> its pinned baseline version (.ktui/baseline.json)

    def _problem_label(self, name: str) -> Text:
        """The problem's name, with ``! reference error`` when its reference failed (``state.problem_badge``)."""
        badge = problem_badge([st for key, st in self._states.items() if key.split("/", 1)[0] == name])
        return Text.assemble((name, "bold"), ("  " + badge[0], badge[1]) if badge else "")

    def problem_label_of(self, name: str) -> str:
        """The plain text of a problem's row, or ``""`` when the tree has no such problem."""
        node = self._problems.get(name)
        return str(node.label) if node is not None else ""

    def rebuild(self, states: dict[str, VersionState]) -> None:
        """Add problems and versions that appeared on disk and drop those that went, keeping the cursor on the
        version it was on (rows rebuilt below it would otherwise shift it to another)."""
        self._states = states
        self._baselines = Baselines(self.ws).all()
        at = self.cursor_node.data if self.cursor_node is not None else None
        rebuilt = False
        problems = self.ws.problems()
        for i, name in enumerate(problems):
            if name not in self._problems:
                # in the workspace's order, not after the others (new-user trial 21 F10: an imported problem came
                # last, under vector_add)
                later = next((self._problems[p] for p in problems[i + 1 :] if p in self._problems), None)
                self._problems[name] = self.root.add(self._problem_label(name), data=name, before=later, expand=True)
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
            rebuilt = True
        if rebuilt and isinstance(at, KernelRef):
            self.select_key(at.key)

    def _label(self, k: KernelRef, state: VersionState | None) -> Text:
        """``v2   ✓ 1.23x``; ``v2   ⌖ base ✓ 1.23x`` on the problem's pinned baseline (``b``)."""
        text, style = state.badge() if state else ("· not run", "dim")
        base = self._baselines.get(k.problem) == k.version
        return Text.assemble((f"{k.version:<4} ", ""), (BASE_MARK, "bold cyan") if base else "", (text, style))

    def pin_baseline(self, problem: str, version: str) -> None:
        """Move the baseline mark of ``problem`` to ``version`` (after ``Baselines.pin``): both rows are
        relabelled."""
        old = self._baselines.get(problem)
        self._baselines[problem] = version
        for v in {old, version} - {None}:
            node = self._leaves.get(f"{problem}/{v}")
            if node is not None and isinstance(node.data, KernelRef):
                node.set_label(self._label(node.data, self._states.get(node.data.key)))

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
        """Put the tree's cursor on version ``key`` (nothing when the tree has no such row). A row added since the
        tree was last drawn has no line number yet (``move_cursor`` would put the cursor on the first row, away
        from the selected version): the tree's lines are built first."""
        node = self._leaves.get(key)
        if node is not None:
            _ = self.last_line  # (builds the tree's lines, which numbers the rows added since it was drawn)
            self.move_cursor(node)

    def version_keys(self) -> list[str]:
        """The versions in the order the tree shows them."""
        return [c.data.key for p in self.root.children for c in p.children if isinstance(c.data, KernelRef)]

    def step(self, key: str | None, delta: int) -> str | None:
        """The version ``delta`` rows after ``key``, across problems; None past the first or last version (no wrap:
        ``[`` on the first version went to the last problem's last one, new-user trial 21 F8); from the ends when
        ``key`` is not shown."""
        keys = self.version_keys()
        if not keys:
            return None
        if key not in keys:
            return keys[0] if delta > 0 else keys[-1]
        i = keys.index(key) + delta
        return keys[i] if 0 <= i < len(keys) else None


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
            word, style = progress or st, STATUS_STYLE.get(st, "")
            if n == "correctness" and st == "waiting" and state is not None and state.first_text():
                # its first verdict is in: not "waiting" as if nothing were judged (new-user trial 21 F6)
                verdict = "FAILED" if state.first and state.first[0] is Status.FAILED else "ok"
                # in the column's 8 cells ("first FA" was cut: new-user trial 33, F9); the figures say it in words
                word, style = f"first {'✗' if verdict == 'FAILED' else '✓'}", STATUS_STYLE[verdict]
            self.update_cell(n, "status", Text(word, style=style))
            running = st == "running" and elapsed is not None
            self.update_cell(n, "time", f"{r.seconds:.2f}s" if r else f"{elapsed:.0f}s" if running else "")
            line = r.summary or (r.error.one_line() if r and r.error else "") if r else ""
            if progress and state and state.progress:  # the step, and the case under way (new-user trial 24 F4)
                step, case = state.progress[2], state.progress[3]
                bound = f"limit {fmt_seconds(limit)} s without progress" if running and limit else ""  # (trial 25 F26)
                line = " · ".join(x for x in (step, f"now {case}" if case else "", bound) if x)
            elif running and not line and limit:
                line = f"running, limit {fmt_seconds(limit)} s without progress"
            first = state.first_text() if state and n == "correctness" and st in ("waiting", "running") else ""
            if first:  # the first verdict while the other cases run (issue 11)
                line = first + (f" · {progress} judged" if progress else " · the rest running")
            failed = (r is not None and r.status is Status.FAILED) or (
                bool(first) and state is not None and state.first is not None and state.first[0] is Status.FAILED
            )
            figures = Text(line, style="red" if failed else "green" if first else "")
            if r and r.warnings:
                figures = Text.assemble((f"⚠{len(r.warnings)} ", "bold yellow"), figures)
            self.update_cell(n, "figures", figures, update_width=True)


ACC_COLUMNS = (  # key (its header), width (None: the widest label), what is dropped first when narrow (lower first)
    ("spec", None, 99),
    ("ok", 4, 99),
    ("max_abs", 8, 9),
    ("max_rel", 8, 7),
    ("psnr_db", 7, 8),
    ("cosine", 9, 6),
    ("mse", 8, 1),
    ("rmse", 8, 2),
    ("nan/inf", 7, 3),
    ("unwritten", 9, 4),
    ("worst at", 12, 5),
    ("worst case", 26, 0),  # its seed and distribution (new-user trial 32, F7: a large-magnitude case's max_abs)
)
ACC_WIDTH = {name: w for name, w, _ in ACC_COLUMNS if w is not None}
ACC_TELLING = 10  # the priority of nan/inf and unwritten when a spec has some: they then say why it failed
SPEC_MIN = 16  # cells the spec column keeps when it is cut (``accuracy_columns``) before the figures go
ACC_KEEP = 8  # columns of this priority or more (psnr_db, max_abs, telling counts) cut the spec column first


def worst_case_cell(s: CorrectnessSpec, width: int) -> str:
    """The worst case of spec ``s`` without its spec (the row's label says it): ``seed=617 dist=large``, cut to
    ``width`` cells ("…" last); "-" when the spec names none."""
    case = str(s.get("worst_case") or "")
    seed = case.find(" seed=")
    if case.startswith("spec=") and seed > 0:  # (a spec's label holds spaces: "spec=(128, 16) seed=404")
        case = case[seed + 1 :]
    case = case.strip() or "-"
    return case if cell_len(case) <= width else case[: width - 1] + "…"


def accuracy_columns(specs: list[CorrectnessSpec], width: int, padding: int = 1) -> list[tuple[str, int | None]]:
    """The columns of ``ACC_COLUMNS`` that fit in ``width`` cells, in table order: the lowest priority goes first
    until the rest fit (``spec`` and ``ok`` always stay), the spec column cut down to ``SPEC_MIN`` cells before one of
    priority ``ACC_KEEP`` or more goes (its labels then end in "…"). nan/inf and unwritten rank above the figures
    when a spec has some (all zero, they say nothing). ``padding`` is the table's cell padding, on each side of each
    column; ``width`` 0 (not laid out yet) keeps every column."""
    telling = {
        "nan/inf": any(s.get("nan_count") or s.get("inf_count") for s in specs),
        "unwritten": any(s.get("unwritten") for s in specs),
    }
    spec_width = max([cell_len("spec"), *(cell_len(s["label"]) for s in specs)])
    kept = [(name, w, ACC_TELLING if telling.get(name) else rank) for name, w, rank in ACC_COLUMNS]

    def total() -> int:
        return sum((w if w is not None else spec_width) + 2 * padding for _, w, _ in kept)

    while width > 0 and total() > width:
        low = min((c for c in kept if c[2] < 99), key=lambda c: c[2], default=None)
        if low is None:
            break
        # the last figures (max_abs, psnr_db) and the telling counts cost the spec column its width first: a 35-cell
        # fuzzed label took the width max_abs, psnr and cosine needed at 80 columns (new-user trial 28, F4)
        if low[2] >= ACC_KEEP and spec_width > SPEC_MIN:
            spec_width = max(SPEC_MIN, spec_width - (total() - width))
            kept[0] = ("spec", spec_width, 99)
            continue
        kept.remove(low)
    return [(name, w) for name, w, _ in kept]


def accuracy_notes(result: LadderResult | None, rung: RungResult | None = None) -> Text:
    """The Accuracy tab's notes, wrapped under the table: why each failing spec failed (its reason, how many of its
    cases failed, its worst case) and a correctness error that no spec explains. Empty when every spec passed.
    ``rung``: a correctness rung to read instead of ``result``'s (a run's, before the run ends)."""
    rung = rung or (result.rung("correctness") if result else None)
    if rung is None:
        return Text()
    t = Text()
    for s in correctness_of(rung.figures).get("specs", []):
        if s.get("ok", True):
            continue
        failed = len(s.get("failed_cases") or [])
        cases = f" ({failed} of {s['cases']} cases failed)" if failed and s.get("cases") else ""
        worst = f"; worst: {s['worst_case']}" if s.get("worst_case") else ""
        t.append("✗ ", "bold red")
        t.append(s["label"], "bold")
        t.append(f": {s.get('reason') or 'outside its tolerance'}{cases}{worst}\n")
    if rung.status is Status.FAILED and rung.error is not None and not t:
        t.append(rung.error.one_line(), "red")
    t.rstrip()
    return t


class AccuracyTable(DataTable[str | Text]):
    """Per test spec, the worst seed's accuracy figures; the columns that do not fit the table's width are left
    out, least telling first (``accuracy_columns``), and come back when it widens."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self._specs: list[CorrectnessSpec] = []
        self._set_columns(accuracy_columns([], 0, self.cell_padding))

    def _set_columns(self, columns: list[tuple[str, int | None]]) -> None:
        self.clear(columns=True)
        for name, width in columns:
            self.add_column(name, key=name, width=width)

    def shown_columns(self) -> list[str]:
        """The keys of the columns the table has now, in order."""
        return [str(c.key.value) for c in self.ordered_columns]

    def _fitting(self) -> list[tuple[str, int | None]]:
        width, height = self.size
        parent = self.parent
        if self.styles.height is not None and self.styles.height.is_auto and isinstance(parent, Widget):
            height = parent.size.height  # an auto height grows up to its parent's (DataTable's max-height)
        if width and len(self._specs) > max(height - self.header_height, 0):
            width -= self.styles.scrollbar_size_vertical  # the rows scroll: the scrollbar takes its cells
        return accuracy_columns(self._specs, width, self.cell_padding)

    def on_resize(self) -> None:
        if [name for name, _ in self._fitting()] != self.shown_columns():
            self._fill(refit=True)

    def _fill(self, refit: bool = False) -> None:
        row = self.cursor_row
        columns = self._fitting()
        if refit or [name for name, _ in columns] != self.shown_columns():
            self._set_columns(columns)
        else:
            self.clear()
        names = [name for name, _ in columns]
        cut = dict(columns).get("spec")
        for s in self._specs:
            self.add_row(*self._cells(s, names, cut), key=s["label"])
        if self._specs:
            self.move_cursor(row=min(row, len(self._specs) - 1), animate=False)

    def show(self, result: LadderResult | None) -> None:
        """Draw ``result``'s correctness specs, a row each (keyed by the spec's label)."""
        self.show_rung(result.rung("correctness") if result else None)

    def show_rung(self, rung: RungResult | None) -> None:
        """Draw a correctness rung's specs (``show``; the TUI draws a run's as soon as its correctness rung ends)."""
        self._specs = list(correctness_of(rung.figures).get("specs", [])) if rung else []
        labels = [s["label"] for s in self._specs]
        names = [name for name, _ in self._fitting()]
        if [str(k.value) for k in self.rows] != labels or names != self.shown_columns():
            self._fill()
            return
        cut = dict(self._fitting()).get("spec")
        for s in self._specs:
            for name, cell in zip(names, self._cells(s, names, cut)):
                self.update_cell(s["label"], name, cell, update_width=True)

    @staticmethod
    def _cells(s: CorrectnessSpec, names: list[str], spec_width: int | None = None) -> list[Any]:
        """The cells of spec ``s`` in the columns ``names``; its label cut to ``spec_width`` cells ("…" last) when
        the spec column was cut (``accuracy_columns``)."""
        ok = Text("ok", "green") if s.get("ok") else Text("FAIL", "bold red")
        where = str(s.get("worst_index")) if s.get("worst_index") is not None else "-"
        label = s["label"]
        if spec_width is not None and cell_len(label) > spec_width:
            label = label[: max(spec_width - 1, 1)] + "…"
        cells = {
            "spec": label,
            "ok": ok,
            "max_abs": fmt(s.get("max_abs_err")),
            "max_rel": fmt(s.get("max_rel_err")),
            "psnr_db": fmt(s.get("psnr_db")),
            "cosine": fmt_fit(s.get("cosine"), 7, ACC_WIDTH["cosine"]),
            "mse": fmt(s.get("mse")),
            "rmse": fmt(s.get("rmse")),
            "nan/inf": f"{s.get('nan_count') or 0}/{s.get('inf_count') or 0}",
            "unwritten": str(s.get("unwritten") or 0),
            "worst at": where,
            "worst case": worst_case_cell(s, ACC_WIDTH["worst case"]),
        }
        return [cells[name] for name in names]


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
    ("verdict", 14),  # "✗ correctness", "◌ needs a GPU": 13 cells (new-user trial 31, F8)
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
    running = bool(st and st.running)
    live = [st.live[n] for n in RUNG_ORDER if n in st.live] if st and running else []
    for text, style in report.details(
        k, st.result if st else None, st.stale if st else "", st.unverified if st else "", running, live
    ):
        t.append(text, style=style or None)
    return t


QUEUE_SHOWN = 3  # versions the queue panel lists one a line before "+N more"


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
        seconds: float | None = None,
        limit: str = "",
    ) -> None:
        """``running`` on ``rung`` (with its ``progress``, ``37/106``, the rung's ``elapsed`` time, ``12s``, and its
        ``limit``, ``limit 30s``, named as such: new-user trial 20 L7 read ``12s/30s`` as nothing), the versions
        ``waiting``, the workers (``workers``: role -> ``WorkerState`` word): their marks in the border, and their
        line (``worker_line``; ``seconds``: how long the rung has run) last."""
        t = Text()
        if running:
            t.append("▶ ", "bold yellow")
            t.append(running, "bold")
            t.append(f"  {elapsed}\n" if elapsed else "\n", "yellow")
            t.append(f"  {rung or 'starting'}{' ' + progress if progress else ''}")
            t.append(f" · {limit}\n" if limit else "\n", "dim")
        else:
            t.append("idle\n", "dim")
        if len(waiting) > 1:  # one a line: a comma-joined list wrapped a lone comma onto a line (trial 21 F10)
            shown = waiting[:QUEUE_SHOWN] if len(waiting) > QUEUE_SHOWN + 1 else waiting
            t.append(f"waiting ({len(waiting)}):\n", "yellow")
            t.append("".join(f"  {key}\n" for key in shown), "yellow")
            if len(shown) < len(waiting):
                t.append(f"  +{len(waiting) - len(shown)} more\n", "dim")
        else:
            t.append(f"waiting: {waiting[0]}\n" if waiting else "nothing waiting\n", "yellow" if waiting else "dim")
        if workers:
            t.append_text(worker_line(workers, rung if running else None, seconds))
            t.append("\n")
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

WORKER_ORDER = ("candidate", "judge", "compiler")
"""The order of the roles in the workers' line (others follow, alphabetically)."""

RUNG_WORKERS: dict[str, tuple[str, ...]] = {
    "compile": ("judge", "compiler"),
    "run": ("candidate", "compiler"),
    "correctness": ("judge",),
    "benchmark": ("candidate", "judge"),
    "dumps": ("compiler",),
    "profile": ("judge",),
    "trace": (),
}
"""The workers each rung calls (``ctx.judge``/``ctx.candidate``/``ctx.compiler`` in ``ktui/core/ladder/rungs/``):
compile describes and prepares in the judge and compiles in the compiler; run executes in the candidate and
compiles its launches in the compiler; correctness compares in the judge; benchmark times both sides; dumps
compiles; profile times the reference in the judge (ncu runs a process of its own); trace runs a process of its own
only."""

WORKER_STYLE = {"ready": "green", "busy": "bold yellow", "starting": "yellow", "restarting": "bold yellow"}
WORKER_STYLE.update({"failed": "bold red", "stopped": "dim"})


def worker_line(workers: dict[str, str], rung: str | None = None, seconds: float | None = None) -> Text:
    """The workers in one readable line: ``workers: candidate ready · judge busy (correctness 12 s) · compiler
    starting``.

    Args:
        workers: role -> its latest ``WorkerState`` word (``starting``, ``ready``, ``restarting``, ``failed``,
            ``stopped``).
        rung: the rung under way, or None when no ladder runs: a ``ready`` worker that it calls
            (``RUNG_WORKERS``) reads ``busy (<rung> <seconds> s)``. Without a ``compiler`` (on a GPU the
            candidate compiles), the compiler's rungs keep the candidate busy.
        seconds: how long the rung has run (None: not known, no seconds shown).
    """
    roles = [r for r in WORKER_ORDER if r in workers] + sorted(r for r in workers if r not in WORKER_ORDER)
    uses = set(RUNG_WORKERS.get(rung, ())) if rung else set()
    if "compiler" in uses and "compiler" not in workers:
        uses.add("candidate")
    t = Text("workers: ", style="dim")
    for i, role in enumerate(roles):
        state = workers[role]
        if state == "ready" and role in uses:
            word, style = f"busy ({rung}{f' {seconds:.0f} s' if seconds is not None else ''})", WORKER_STYLE["busy"]
        else:
            word, style = state, WORKER_STYLE.get(state, "")
        t.append(" · " if i else "", style="dim")
        t.append(f"{role} ")
        t.append(word, style=style)
    return t
