"""The panels of the main screen. Each draws from ``VersionState``s; none runs anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.containers import Horizontal
from textual.widgets import DataTable, Static, Tree
from textual.widgets.tree import TreeNode

from ktui.core.inspect import sass
from ktui.core.results import LadderResult, RungResult, Status, device_label, fmt
from ktui.tui.state import VersionState, rung_names
from ktui.core.workspace import KernelRef, Workspace

STATUS_STYLE = {"ok": "bold green", "FAILED": "bold red", "skipped": "dim", "running": "bold yellow",
                "waiting": "yellow", "stale": "dim italic", "-": "dim"}


class KernelTree(Tree):
    """Problems and their versions, each version with its latest verdict."""

    def __init__(self, workspace: Workspace, **kw: Any):
        super().__init__("kernels", **kw)
        self.ws = workspace
        self.show_root = False
        self.guide_depth = 2
        self._leaves: dict[str, TreeNode] = {}
        self._problems: dict[str, TreeNode] = {}

    def rebuild(self, states: dict[str, VersionState]) -> None:
        """Add problems and versions that appeared on disk and drop those that went (keeping the cursor)."""
        problems = self.ws.problems()
        for name in problems:
            if name not in self._problems:
                self._problems[name] = self.root.add(Text(name, style="bold"), data=name, expand=True)
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

    def select_key(self, key: str) -> None:
        node = self._leaves.get(key)
        if node is not None:
            self.move_cursor(node)

    def version_keys(self) -> list[str]:
        """The versions in the order the tree shows them."""
        return [c.data.key for p in self.root.children for c in p.children if isinstance(c.data, KernelRef)]


class LadderTable(DataTable):
    """The rungs of the selected version: status, time, figures in one line."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("rung", key="rung", width=12)
        self.add_column("status", key="status", width=8)
        self.add_column("time", key="time", width=7)
        self.add_column("figures", key="figures")

    def show(self, state: VersionState | None) -> None:
        names = rung_names(state)
        if [str(k.value) for k in self.rows] != list(names):
            self.clear()
            for n in names:
                self.add_row(n, "", "", "", key=n)
        for n in names:
            st, r = state.rung(n) if state else ("-", None)
            self.update_cell(n, "status", Text(st, style=STATUS_STYLE.get(st, "")))
            self.update_cell(n, "time", f"{r.seconds:.2f}s" if r else "")
            line = r.summary or (r.error.one_line() if r and r.error else "") if r else ""
            figures = Text(line, style="red" if r and r.status is Status.FAILED else "")
            if r and r.warnings:
                figures = Text.assemble((f"⚠{len(r.warnings)} ", "bold yellow"), figures)
            self.update_cell(n, "figures", figures, update_width=True)


ACC_COLUMNS = (("spec", None), ("ok", 4), ("max_abs", 8), ("max_rel", 8), ("psnr_db", 7), ("cosine", 9), ("mse", 8),
               ("rmse", 8), ("nan/inf", 7), ("unwritten", 9), ("worst at", 12))


class AccuracyTable(DataTable):
    """Per test spec, the worst seed's accuracy figures."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name, width in ACC_COLUMNS:
            self.add_column(name, key=name, width=width)

    def show(self, result: LadderResult | None) -> None:
        rung = result.rung("correctness") if result else None
        specs = rung.figures.get("specs", []) if rung else []
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
    def _cells(s: dict[str, Any]) -> list[Any]:
        ok = Text("ok", "green") if s.get("ok") else Text("FAIL", "bold red")
        nan_inf = f"{s.get('nan_count') or 0}/{s.get('inf_count') or 0}"
        where = str(s.get("worst_index")) if s.get("worst_index") is not None else "-"
        return [s["label"], ok, fmt(s.get("max_abs_err")), fmt(s.get("max_rel_err")), fmt(s.get("psnr_db")),
                fmt(s.get("cosine"), 7), fmt(s.get("mse")), fmt(s.get("rmse")), nan_inf,
                str(s.get("unwritten") or 0), where]


TIME_COLUMNS = (("version", 8), ("spec", None), ("median us", 10), ("IQR us", 8), ("ref us", 10), ("speedup", 8),
                ("GB/s", 7), ("TFLOP/s", 8), ("% SOL", 6), ("verdict", 12))


class TimingsTable(DataTable):
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
        for s in bench.figures.get("specs", []):
            out.append((f"{k.version}:{s['label']}", [
                k.version, s["label"], fmt(s.get("median_us"), 4), fmt(s.get("iqr_us"), 2),
                fmt(s.get("ref_median_us"), 4),
                Text(f"{s['speedup']:.2f}x", "bold green" if s["speedup"] >= 1 else "yellow") if s.get("speedup")
                else "-",
                f"{s['gbps']:.0f}" if s.get("gbps") is not None else "-",
                f"{s['tflops']:.1f}" if s.get("tflops") is not None else "-",
                f"{s['sol_pct']:.0f}" if s.get("sol_pct") is not None else "-",
                verdict,
            ]))
        return out or [(k.version, [k.version, "-", "-", "-", "-", "-", "-", "-", "-", verdict])]


def details_text(k: KernelRef | None, st: VersionState | None) -> Text:
    """The Details tab: device, source hash, compile launches, warnings, and the failure with its traceback."""
    if k is None:
        return Text("Select a version in the tree.", style="dim")
    res = st.result if st else None
    t = Text()
    t.append(f"{k.key}", style="bold")
    t.append(f"  {k.path.relative_to(k.root)}\n")
    if res is None:
        t.append("Not run yet: press r to run it, or save the file.\n", style="dim")
        return t
    t.append(f"device: {device_label(res.device)}   source sha256: {res.source_sha256[:12]}   "
             f"reference: {res.reference_sha256[:12]}   {res.seconds:.1f} s\n")
    comp = res.rung("compile")
    for rec in (comp.figures.get("launches", []) if comp else []):
        sig = ", ".join(f"{a}:{v}" for a, v in (rec.get("signature") or {}).items())
        tuning = f" warps={rec.get('num_warps')} stages={rec.get('num_stages')}" if rec.get("num_warps") else ""
        t.append(f"  {rec.get('language')} {rec.get('kernel')} [{rec.get('target')}]{tuning}  {sig}\n",
                 style="cyan")
    for r in res.rungs:
        for w in r.warnings:
            t.append(f"warning [{r.name}]: {w}\n", style="yellow")
    failed: RungResult | None = res.failed_rung
    if failed and failed.error:
        t.append(f"\n[{failed.name}] FAILED  {failed.error.one_line()}\n", style="bold red")
        if failed.error.traceback:
            t.append(failed.error.traceback.rstrip() + "\n")
    return t


class QueuePanel(Static):
    """What runs now, what waits, and the workers' states."""

    def render_state(self, running: str | None, rung: str | None, waiting: tuple[str, ...],
                     workers: dict[str, str]) -> None:
        t = Text()
        if running:
            t.append("▶ ", "bold yellow")
            t.append(f"{running}", "bold")
            t.append(f" · {rung or 'starting'}\n")
        else:
            t.append("idle\n", "dim")
        t.append(f"waiting: {', '.join(waiting)}\n" if waiting else "nothing waiting\n",
                 "yellow" if waiting else "dim")
        for role, state in sorted(workers.items()):
            mark, style = WORKER_MARK.get(state, ("?", "dim"))
            t.append(f"{role[:4]} ", "dim")
            t.append(f"{mark} ", style)
        self.update(t)


WORKER_MARK = {"ready": ("✓", "green"), "starting": ("…", "yellow"), "restarting": ("↻", "bold yellow"),
               "failed": ("✗", "bold red"), "stopped": ("-", "dim")}


class SourceSass(Horizontal):
    """The kernel's Python source beside its SASS: moving in one moves the other to what the line info links."""

    def compose(self):
        yield DataTable(id="src", cursor_type="row", zebra_stripes=False)
        yield DataTable(id="asm", cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        src, asm = self.query_one("#src", DataTable), self.query_one("#asm", DataTable)
        src.add_column("line", width=5)
        src.add_column("source")
        asm.add_column("addr", width=6)
        asm.add_column("instruction")
        asm.add_column("line", width=5)
        self._map: dict = {"lines": {}, "instrs": []}
        self._syncing = False
        self._shown: tuple | None = None

    def show(self, root: Path, result: LadderResult | None) -> None:
        """Load the source snapshot and SASS of ``result``'s dumps (the first kernel that has SASS)."""
        dumps = result.rung("dumps") if result else None
        kernels = [k for k in (dumps.figures.get("kernels", []) if dumps else []) if "sass" in k.get("files", {})]
        key = (result.key, result.source_sha256) if result and kernels else None
        if key == self._shown:
            return
        self._shown = key
        src, asm = self.query_one("#src", DataTable), self.query_one("#asm", DataTable)
        src.clear()
        asm.clear()
        if not kernels:
            src.add_row("", Text("no dumps yet: the dumps rung writes them", style="dim"))
            return
        snap = root / ".ktui" / "snapshots" / result.problem / f"{result.version}-{result.source_sha256[:12]}.py"
        text = snap.read_text() if snap.exists() else (root / result.kernel).read_text()
        for i, line in enumerate(text.splitlines(), 1):
            src.add_row(str(i), line, key=str(i))
        k = kernels[0]
        try:
            self._map = json.loads((root / k["files"]["linemap"]).read_text())
            funcs = sass.parse((root / k["files"]["sass"]).read_text())
        except (OSError, ValueError, KeyError):
            return
        n = 0
        for f in funcs:
            for ins in f.instrs:
                line = self._map["instrs"][n] if n < len(self._map["instrs"]) else None
                asm.add_row(f"{ins.addr:04x}", ins.text(), str(line or ""), key=str(n))
                n += 1

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self._syncing or event.row_key is None or event.row_key.value is None:
            return
        src, asm = self.query_one("#src", DataTable), self.query_one("#asm", DataTable)
        self._syncing = True
        try:
            if event.data_table is src:
                hits = self._map.get("lines", {}).get(event.row_key.value)
                if hits:
                    asm.move_cursor(row=asm.get_row_index(str(hits[0])))
            else:
                n = int(event.row_key.value)
                line = self._map["instrs"][n] if n < len(self._map.get("instrs", [])) else None
                if line is not None and str(line) in src.rows:
                    src.move_cursor(row=src.get_row_index(str(line)))
        finally:
            self._syncing = False

    def sass_rows_for_line(self, line: int) -> list[int]:
        return list(self._map.get("lines", {}).get(str(line), []))


PROFILE_ROWS = (("duration_us", "duration (us)"), ("sm_throughput_pct", "SM throughput %"),
                ("memory_throughput_pct", "memory throughput %"), ("dram_throughput_pct", "DRAM throughput %"),
                ("achieved_occupancy_pct", "achieved occupancy %"),
                ("theoretical_occupancy_pct", "theoretical occupancy %"), ("registers", "registers/thread"),
                ("shared_bytes", "shared memory B/block"), ("local_bytes", "local (spill) traffic B"),
                ("bank_conflicts", "smem bank conflicts"), ("tensor_pipe_pct", "tensor pipe %"),
                ("grid_size", "grid"), ("block_size", "block"), ("waves", "waves/SM"))


class ProfileTable(DataTable):
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
            self.add_row(label, fmt(k.get(key)), fmt(d["baseline"]) if d else "",
                         (f"{d['delta']:+.4g}" if d else ""),
                         Text("noise", "dim") if d and d["within_noise"] else (Text("changed", "bold") if d else ""),
                         key=key)
        for key, label in (("pct_peak_bandwidth", "% of peak bandwidth"), ("pct_peak_flops", "% of peak FLOP/s")):
            if prof.figures.get(key) is not None:
                self.add_row(label, fmt(prof.figures[key]), "", "", "", key=key)
        self.add_row("report", str(prof.figures.get("report", "")), prof.figures.get("baseline", ""), "", "",
                     key="report")
