"""The tabs that look inside a version: its source beside its SASS, the diff against its baseline, its profile and
trace.

Each draws from a ``LadderResult`` and the files its dumps, profile and trace rungs wrote; the diff is computed on a
thread worker. The SASS tab shows the profile's source page beside each instruction and line (warp stall samples,
the top stall reason) when the profile ran on the same build; the Profile tab shows the trace's regions and its
timeline, one row per SM, regions coloured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Log, Static, TabbedContent

from ktui.core import inside
from ktui.core.figures import dumps_of, trace_of
from ktui.core.inspect import sass
from ktui.core.results import LadderResult, Status, fmt
from ktui.core.store import Snapshots
from ktui.core.workspace import KernelRef, Workspace


class SourceSass(Horizontal):
    """The kernel's Python source beside its SASS: moving in one moves the other to what the line info links.
    ``i`` looks the instruction under the SASS cursor up in the PTX ISA (the Context tab)."""

    BINDINGS = [Binding("i", "isa_lookup", "Look up in the ISA")]

    def compose(self) -> ComposeResult:
        yield DataTable(id="src", cursor_type="row", zebra_stripes=False)
        yield DataTable(id="asm", cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        src, asm = self.query_one("#src", DataTable), self.query_one("#asm", DataTable)
        src.add_column("line", width=5)
        src.add_column("source")
        src.add_column("stall%", width=6)
        asm.add_column("addr", width=6)
        asm.add_column("instruction")
        asm.add_column("line", width=5)
        asm.add_column("stall%", width=6)
        asm.add_column("top stall", width=14)
        self._map: dict[str, Any] = {"lines": {}, "instrs": []}
        self._syncing = False
        self._shown: tuple[str, str, str | None] | None = None

    def show(self, root: Path, result: LadderResult | None) -> None:
        """Load the source snapshot and SASS of ``result``'s dumps (the first kernel that has SASS)."""
        dumps = result.rung("dumps") if result else None
        kernels = [
            k for k in (dumps_of(dumps.figures).get("kernels", []) if dumps else []) if "sass" in k.get("files", {})
        ]
        prof = result.rung("profile") if result else None
        source_file = (prof.figures.get("source") or {}).get("file") if prof and prof.status is Status.OK else None
        key = (result.key, result.source_sha256, source_file) if result and kernels else None
        if key == self._shown:
            return
        self._shown = key
        src, asm = self.query_one("#src", DataTable), self.query_one("#asm", DataTable)
        src.clear()
        asm.clear()
        if not kernels:
            src.add_row("", Text("no dumps yet: the dumps rung writes them", style="dim"))
            return
        assert result is not None  # (kernels come from its dumps rung)
        snap = Snapshots(Workspace(root)).path_for(result.problem, result.version, result.source_sha256)
        text = snap.read_text() if snap.exists() else (root / result.kernel).read_text()
        k = kernels[0]
        page = stall_page(root, source_file, k["files"]["sass"]) if source_file else None
        per_line = {h["line"]: h for h in (page or {}).get("lines", [])}
        for i, line in enumerate(text.splitlines(), 1):
            h = per_line.get(i)
            src.add_row(str(i), line, _pct(h["pct"]) if h and h["samples"] else "", key=str(i))
        try:
            self._map = json.loads((root / k["files"]["linemap"]).read_text())
            funcs = sass.parse((root / k["files"]["sass"]).read_text())
        except (OSError, ValueError, KeyError):
            return
        rows = {r["offset"]: r for r in (page or {}).get("rows", [])}
        total = sum(r["samples"] for r in rows.values()) or 1.0
        n = 0
        for f in funcs:
            base = f.instrs[0].addr if f.instrs else 0
            for ins in f.instrs:
                linked = self._map["instrs"][n] if n < len(self._map["instrs"]) else None
                r = rows.get(ins.addr - base) if len(funcs) == 1 else None
                pct = _pct(100.0 * r["samples"] / total) if r and r["samples"] else ""
                top = next(iter(r["stalls"].items()), None) if r else None
                stall = f"{top[0]} {100 * top[1] / r['samples']:.0f}%" if top and r and r["samples"] else ""
                asm.add_row(f"{ins.addr:04x}", ins.text(), str(linked or ""), pct, stall, key=str(n))
                n += 1

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self._syncing or event.row_key is None or event.row_key.value is None:
            return
        src, asm = self.query_one("#src", DataTable), self.query_one("#asm", DataTable)
        self._syncing = True
        try:
            # a highlight queued before the tables were filled again (another version: ] pressed quickly, new-user
            # trial 25 F1, RowDoesNotExist) may name a row the new map or table does not have: nothing to follow
            if event.data_table is src:
                hits = self._map.get("lines", {}).get(event.row_key.value)
                if hits and str(hits[0]) in asm.rows:
                    asm.move_cursor(row=asm.get_row_index(str(hits[0])))
            else:
                n = int(event.row_key.value)
                line = self._map["instrs"][n] if n < len(self._map.get("instrs", [])) else None
                if line is not None and str(line) in src.rows:
                    src.move_cursor(row=src.get_row_index(str(line)))
        finally:
            self._syncing = False

    def instruction_at_cursor(self) -> str:
        """The text of the SASS row under the cursor ('' when there is none)."""
        asm = self.query_one("#asm", DataTable)
        if not asm.row_count:
            return ""
        try:
            return str(asm.get_row_at(asm.cursor_row)[1])
        except Exception:  # (a row removed under the cursor)
            return ""

    def action_isa_lookup(self) -> None:
        from ktui.context.isa import isa_query
        from ktui.tui.context_panel import ContextPanel

        text = self.instruction_at_cursor()
        query = isa_query(text)
        if not query:
            self.notify("no instruction under the cursor", severity="warning")
            return
        panels = self.app.query(ContextPanel)
        if not panels:
            self.notify(f"{query}: this screen has no Context tab", severity="warning")
            return
        self.app.query_one("#tabs", TabbedContent).active = "tab-context"
        panels.first().lookup(query, "ptx")

    def sass_rows_for_line(self, line: int) -> list[int]:
        """The SASS rows (instruction numbers) that the line info links to source line ``line``."""
        return list(self._map.get("lines", {}).get(str(line), []))

    def line_of(self, row: int) -> int | None:
        """The source line that SASS row ``row`` comes from, by the line info (None: no line, or no such row)."""
        instrs = self._map.get("instrs", [])
        return instrs[row] if 0 <= row < len(instrs) else None


def stall_page(root: Path, source_file: str, sass_file: str) -> dict[str, Any] | None:
    """The profile's source page of the kernel whose dumps SASS is ``sass_file`` (``rows`` per instruction offset,
    ``lines`` per Python line: ``ktui.core.inspect.ncusource``), when the profile matched that build; else None."""
    try:
        doc = json.loads((root / source_file).read_text())
    except (OSError, ValueError):
        return None
    for k in doc.get("kernels", []):
        if k.get("dumps_sass") == sass_file:
            return dict(k)
    return None


def _pct(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


PROFILE_ROWS = (
    ("duration_us", "duration (us)"),
    ("sm_throughput_pct", "SM throughput %"),
    ("memory_throughput_pct", "memory throughput %"),
    ("dram_throughput_pct", "DRAM throughput %"),
    ("achieved_occupancy_pct", "achieved occupancy %"),
    ("theoretical_occupancy_pct", "theoretical occupancy %"),
    ("registers", "registers/thread"),
    ("shared_bytes", "shared memory B/block"),
    ("local_bytes", "local (spill) traffic B"),
    ("bank_conflicts", "smem bank conflicts"),
    ("tensor_pipe_pct", "tensor pipe %"),
    ("grid_size", "grid"),
    ("block_size", "block"),
    ("waves", "waves/SM"),
)


class ProfileTable(DataTable[str | Text]):
    """Nsight Compute figures of the selected version, with deltas against the pinned baseline."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name, width in (("figure", None), ("value", 12), ("baseline", 12), ("delta", 12), ("", 8)):
            self.add_column(name, key=name or "noise", width=width)

    def show(self, result: LadderResult | None) -> None:
        self.clear()
        prof = result.rung("profile") if result else None
        if prof is None or prof.status is not Status.OK:
            why = prof.summary if prof is not None else "not profiled: press p (needs a GPU and ncu)"
            self.add_row(Text(why, style="dim"), "", "", "", "")
            return
        k = prof.figures["kernels"][0]
        deltas = (prof.figures.get("deltas") or [{}])[0]
        for key, label in PROFILE_ROWS:
            d = deltas.get(key)
            self.add_row(
                label,
                fmt(k.get(key)),
                fmt(d["baseline"]) if d else "",
                (f"{d['delta']:+.4g}" if d else ""),
                Text("noise", "dim") if d and d["within_noise"] else (Text("changed", "bold") if d else ""),
                key=key,
            )
        for key, label in (("pct_peak_bandwidth", "% of peak bandwidth"), ("pct_peak_flops", "% of peak FLOP/s")):
            if prof.figures.get(key) is not None:
                self.add_row(label, fmt(prof.figures[key]), "", "", "", key=key)
        self.add_row(
            "report", str(prof.figures.get("report", "")), prof.figures.get("baseline", ""), "", "", key="report"
        )


class DiffView(Log):
    """The Diff tab: a version against the problem's pinned baseline, else the version before it (resources,
    instruction-mix delta, normalized SASS diff), unified or side by side."""

    NOTHING = (
        "Nothing to compare yet: the diff shows this version against the pinned baseline (b) or the version "
        "before it, once both have been through the ladder."
    )

    def __init__(self, **kw: Any) -> None:
        super().__init__(highlight=False, **kw)
        self.side_by_side = False
        self._key: str | None = None

    @staticmethod
    def compare_with(
        ws: Workspace, k: KernelRef, results: dict[str, LadderResult | None] | None = None
    ) -> KernelRef | None:
        """The pinned baseline of ``k``'s problem, else the nearest version before ``k`` whose latest result (in
        ``results``, by key) has dumps, else the version just before ``k`` (its message says why there is no diff).
        A version whose ladder stopped before dumps (a failed run) never has any: the Diff tab sent a new user to
        run one that had run."""
        from ktui.core.ladder import Baselines

        versions = [v.version for v in ws.versions(k.problem)]
        base = Baselines(ws).get(k.problem)
        if base and base != k.version and base in versions:
            return KernelRef(k.problem, base, ws.root)
        i = versions.index(k.version) if k.version in versions else 0
        for v in reversed(versions[:i]):
            r = (results or {}).get(f"{k.problem}/{v}")
            dumps = r.rung("dumps") if r is not None else None
            if dumps is not None and dumps.status is Status.OK:
                return KernelRef(k.problem, v, ws.root)
        return KernelRef(k.problem, versions[i - 1], ws.root) if i > 0 else None

    def show(self, ws: Workspace, k: KernelRef | None, results: dict[str, LadderResult | None]) -> None:
        """Compare ``k`` with what ``compare_with`` picks, given the latest result of each version by key. The
        worker runs on the app, so that the app's ``Worker.StateChanged`` handler reports it if it fails."""
        self.clear()
        self._key = k.key if k else None
        other = self.compare_with(ws, k, results) if k else None
        ra, rb = (results.get(other.key) if other else None), (results.get(k.key) if k else None)
        if k is None or other is None or ra is None or rb is None:
            self.write_lines(self.wrapped(self.NOTHING))
            return
        self.app.run_worker(
            lambda: self._compute(ws, other, k, ra, rb),
            thread=True,
            group="diff",
            exclusive=True,
            description=f"the diff of {k.key}",
            exit_on_error=False,
        )

    def _compute(self, ws: Workspace, a: KernelRef, b: KernelRef, ra: LadderResult, rb: LadderResult) -> None:
        from ktui.core.inspect.diff import DiffError, compare_results, render

        try:
            text = render(compare_results([(ws, a, ra), (ws, b, rb)]), side_by_side=self.side_by_side)
        except (DiffError, OSError) as exc:
            text = "\n".join(self.wrapped(str(exc)))  # a message, not a diff: wrapped to the pane
        self.app.call_from_thread(self._write, b.key, text)

    def wrapped(self, message: str) -> list[str]:
        """``message`` wrapped to the pane's width (a Log does not wrap: new-user trial 21 F8 read "...once both
        have bee" at the edge); 80 columns before the pane has a size."""
        import textwrap

        width = max(20, (self.scrollable_content_region.width or 80) - 1)
        return [ln for para in message.splitlines() for ln in (textwrap.wrap(para, width) or [""])]

    def _write(self, key: str, text: str) -> None:
        if key != self._key:
            return  # the selection moved on while the diff was computed
        self.clear()
        self.write_lines(text.splitlines())
        self.scroll_home(animate=False)


TIMELINE_ROWS = 64  # rows of the timeline drawn (the trace rung keeps up to tracestats.TIMELINE_ROWS)
REGION_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7")


class TraceView(Static):
    """The trace rung's result (``t``): regions, CTAs, the critical path, the traced against the untraced time, and
    the timeline, one row per SM, each cell coloured by the region its warps spent the most time in."""

    def show(self, result: LadderResult | None) -> None:
        tr = result.rung("trace") if result else None
        if tr is None:
            self.update(Text("not traced: press t (needs a GPU, and ktui.trace regions in the kernel)", style="dim"))
            return
        if tr.status is not Status.OK:
            style = "dim" if tr.status is Status.SKIPPED else "red"
            self.update(Text(f"trace {tr.status.value}: {tr.summary}", style=style))
            return
        self.update(trace_text(tr.figures))


def trace_text(figures: dict[str, Any]) -> Text:
    """The trace as coloured text: the lines of ``ktui.core.inside.trace_lines`` with every timeline row's cells
    drawn as blocks in their region's colour (``-`` in no region: a shade; ``.`` idle: blank), and a legend."""
    fig = trace_of(figures)
    colours: dict[str, str] = {}
    rows: dict[str, tuple[str, str]] = {}  # the line trace_lines writes for a timeline row -> (label, cells)
    for k in fig.get("kernels", []):
        tl = k.get("timeline") or {}
        for letter in tl.get("legend", {}):
            colours.setdefault(letter, REGION_COLOURS[(ord(letter) - ord("A")) % len(REGION_COLOURS)])
        for row in tl.get("rows", []):
            rows[f"    {row['label']:>8} {row['cells']}"] = (row["label"], row["cells"])
    out = Text()
    for line in inside.trace_lines(dict(figures), timeline_rows=TIMELINE_ROWS, indent=""):
        if line not in rows:
            out.append(line + "\n", style="" if line.startswith(" ") else "bold")
            continue
        label, cells = rows[line]
        out.append(f"    {label:>8} ")
        for c in cells:
            if c in colours:
                out.append("\u2588", style=colours[c])
            elif c == "-":
                out.append("\u2591", style="grey50")
            else:
                out.append(" ")
        out.append("\n")
    names: dict[str, set[str]] = {}
    for k in fig.get("kernels", []):
        for a, n in (k.get("timeline") or {}).get("legend", {}).items():
            names.setdefault(a, set()).add(n)
    for letter, colour in colours.items():
        out.append("\u2588", style=colour)
        out.append(f" {letter} {'/'.join(sorted(names[letter]))}  ")
    if colours:
        out.append("\u2591 in no region\n", style="grey50")
    return out
