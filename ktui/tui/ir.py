"""The IR tab: a version's compiler stages (TTIR, TTGIR, LLIR, PTX, SASS) beside its source, per launch.

The dumps rung keeps each launch's stages in ``.ktui/dumps/<problem>/<version>-<sha12>/<n>-<kernel>.<stage>`` (the
``files`` of its figures, relative to the workspace). The tab reads the chosen stage only while it is shown, on a
thread worker, and draws its first ``CAP`` lines (highlighted by rich's lexer where there is one: ``llvm`` for
LLIR, ``ptx`` for PTX); a last row says how many more there are, and ``e`` (or enter on that row) draws the rest,
``CHUNK`` lines at a time, so that an LLIR of megabytes does not stop the screen. Moving through the source or the
stage moves the other to what the stage's line info links (``ktui.core.inspect.irlines``), as the SASS tab does.
Keys inside the tab: ``,`` / ``.`` the previous / next stage, ``e`` every line; the stage row and the launch chooser
take the mouse and the arrow keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Select, Static, Tab, Tabs

from ktui.core.figures import DumpsKernel, dumps_of
from ktui.core.inspect.irlines import STAGES, line_map, source_lines
from ktui.core.results import LadderResult
from ktui.core.store import Snapshots
from ktui.core.workspace import Workspace

LABELS = {"ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLIR", "ptx": "PTX", "sass": "SASS"}
LEXERS = {"llir": "llvm", "ptx": "ptx"}  # pygments lexers (through rich); TTIR, TTGIR and SASS have none
CAP = 2000  # lines drawn at first: DataTable rows cost ~50 us each to add and lay out (1 s for 20,000)
CHUNK = 2000  # lines drawn per step of "every line"
MORE = "more"  # the row key of the "... N more lines" row


def highlight(stage: str, lines: list[str]) -> list[Text]:
    """``lines`` of ``stage`` (tabs expanded) as rich ``Text``, coloured by the stage's lexer when it has one."""
    lexer = LEXERS.get(stage)
    if lexer is None or not lines:
        return [Text(ln) for ln in lines]
    text = Syntax("", lexer, theme="ansi_dark").highlight("\n".join(lines))
    out = list(text.split("\n", allow_blank=True))[: len(lines)]
    return out + [Text(ln) for ln in lines[len(out) :]]


@dataclass
class Loaded:
    """One stage of one launch, read: its lines (tabs expanded), their source lines, and how many are drawn."""

    token: int
    stage: str
    path: str  # relative to the workspace
    lines: list[str]
    map: dict[str, Any] = field(default_factory=dict)
    drawn: int = 0


class IRView(Vertical):
    """The IR tab: a launch chooser, a stage row, and the source beside the chosen stage's text."""

    DEFAULT_CSS = """
    IRView #ir-bar { height: 1; }
    IRView #ir-launch { width: 36; }
    IRView #ir-stages { width: 32; height: 1; }
    IRView #ir-stages Tab.-active { text-style: bold reverse; }
    IRView #ir-stages Underline { display: none; }
    IRView #ir-stages Tab { padding: 0 1; }
    IRView #ir-info { width: 1fr; padding: 0 1; color: $text-muted; }
    IRView #ir-panes { height: 1fr; }
    IRView #ir-src { width: 40%; }
    IRView #ir-text { width: 1fr; }
    """

    BINDINGS = [
        Binding("comma", "stage(-1)", "Prev stage"),
        Binding("full_stop", "stage(1)", "Next stage"),
        Binding("e", "show_all", "Every line"),
    ]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._root: Path | None = None
        self._result: LadderResult | None = None
        self._kernels: list[DumpsKernel] = []
        self._launch = 0
        self._stage: str | None = None  # the chosen stage (kept across versions while it exists)
        self._shown: tuple[Any, ...] | None = ("nothing drawn",)  # what the tables hold: (key, sha, dir, launch, stage)
        self._wanted: tuple[Any, ...] | None = None  # what show() last asked for
        self._token = 0
        self._loaded: Loaded | None = None
        self._syncing = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="ir-bar"):
            yield Select[int]([], prompt="launch", allow_blank=True, compact=True, id="ir-launch")
            yield Tabs(*(Tab(LABELS[s], id=f"ir-{s}") for s in STAGES), id="ir-stages")
            yield Static("", id="ir-info")
        with Horizontal(id="ir-panes"):
            yield DataTable(id="ir-src", cursor_type="row", zebra_stripes=False)
            yield DataTable(id="ir-text", cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        src, ir = self.query_one("#ir-src", DataTable), self.query_one("#ir-text", DataTable)
        src.add_column("line", width=5)
        src.add_column("source")
        ir.add_column("#", width=6)
        ir.add_column("text")
        ir.add_column("line", width=5)
        self.query_one("#ir-launch").display = False

    # -- what is shown -------------------------------------------------------------------------------------------
    def show(self, root: Path, result: LadderResult | None) -> None:
        """The stages of ``result``'s dumps (read once the tab is shown: nothing is read while it is hidden)."""
        dumps = result.rung("dumps") if result else None
        kernels = [
            k
            for k in (dumps_of(dumps.figures).get("kernels", []) if dumps else [])
            if any(s in k.get("files", {}) for s in STAGES)
        ]
        wanted = (result.key, result.source_sha256, dumps.figures.get("dir")) if result and dumps and kernels else None
        if wanted == self._wanted:
            return
        self._wanted, self._root, self._result, self._kernels = wanted, root, result, kernels
        self._launch = 0
        self._shown = ("changed",)
        if self.is_on_screen:
            self._refresh()

    def on_show(self, event: events.Show) -> None:
        self._refresh()

    def stages(self) -> list[str]:
        """The stages the chosen launch has, in compiler order."""
        files = self._kernels[self._launch].get("files", {}) if self._kernels else {}
        return [s for s in STAGES if s in files]

    @property
    def stage(self) -> str | None:
        """The stage shown (None: no dumps)."""
        return self._stage if self._kernels else None

    def _refresh(self) -> None:
        """Make the tables hold the chosen launch's chosen stage (reading it on a worker) if they do not yet."""
        if self._kernels and self._launch >= len(self._kernels):
            self._launch = 0
        stages = self.stages()
        if stages and self._stage not in stages:
            self._stage = "ptx" if "ptx" in stages else stages[0]
        target = (*self._wanted, self._launch, self._stage) if self._wanted else None
        if target == self._shown:
            return
        self._shown = target
        self._token += 1
        self._loaded = None
        self._sync_choosers(stages)
        src, ir = self.query_one("#ir-src", DataTable), self.query_one("#ir-text", DataTable)
        src.clear()
        ir.clear()
        if not self._kernels or self._root is None or self._result is None or self._stage is None:
            self.query_one("#ir-info", Static).update("")
            src.add_row("", Text("no dumps yet: the dumps rung writes them", style="dim"))
            return
        ir.add_row("", Text("reading…", style="dim"), "", key=MORE)
        root, result, stage, token = self._root, self._result, self._stage, self._token
        path = self._kernels[self._launch]["files"][stage]
        self.app.run_worker(
            lambda: self._read(token, root, result, stage, path),
            thread=True,
            group="ir",
            exclusive=True,
            description=f"reading the {LABELS[stage]} of {result.key}",
            exit_on_error=False,
        )

    def _sync_choosers(self, stages: list[str]) -> None:
        """The launch chooser and the stage row show the choice (their own messages held back meanwhile)."""
        with self.prevent(Tabs.TabActivated, Select.Changed):
            launch = self.query_one("#ir-launch", Select)
            launch.display = len(self._kernels) > 1
            launch.set_options(
                (f"{i}: {k.get('kernel')} (w={k.get('num_warps')}, s={k.get('num_stages')})", i)
                for i, k in enumerate(self._kernels)
            )
            if self._kernels:
                launch.value = self._launch
            tabs = self.query_one("#ir-stages", Tabs)
            for s in STAGES:
                (tabs.show if s in stages else tabs.hide)(f"ir-{s}")
            if self._stage in stages:
                tabs.active = f"ir-{self._stage}"

    # -- reading, on a thread ------------------------------------------------------------------------------------
    def _read(self, token: int, root: Path, result: LadderResult, stage: str, rel: str) -> None:
        snap = Snapshots(Workspace(root)).path_for(result.problem, result.version, result.source_sha256)
        source_path = snap if snap.exists() else root / result.kernel
        try:
            source = source_path.read_text(errors="replace")
            text = (root / rel).read_text(errors="replace")
        except OSError as exc:
            self.app.call_from_thread(self._failed, token, f"could not read {rel}: {exc}")
            return
        lines = [ln.expandtabs(8) for ln in text.splitlines()]
        loaded = Loaded(token, stage, rel, lines, line_map(source_lines(stage, text, str(source_path))))
        first = highlight(stage, lines[:CAP])
        self.app.call_from_thread(self._fill, loaded, source.splitlines(), first)

    def _failed(self, token: int, message: str) -> None:
        if token != self._token:
            return
        ir = self.query_one("#ir-text", DataTable)
        ir.clear()
        ir.add_row("", Text(message, style="red"), "")

    def _fill(self, loaded: Loaded, source: list[str], first: list[Text]) -> None:
        if loaded.token != self._token:
            return  # the choice moved on while the stage was read
        self._loaded = loaded
        src, ir = self.query_one("#ir-src", DataTable), self.query_one("#ir-text", DataTable)
        src.clear()
        ir.clear()
        for i, line in enumerate(source, 1):
            src.add_row(str(i), line, key=str(i))
        self._append(loaded, first)
        k = self._kernels[self._launch]
        linked = "" if loaded.map.get("lines") else " · no source line info"
        self.query_one("#ir-info", Static).update(
            f"{k.get('kernel')} · {len(loaded.lines)} lines{linked} · {Path(loaded.path).name} · , . stage"
        )

    def _append(self, loaded: Loaded, texts: list[Text]) -> None:
        """Draw ``texts`` (the next lines of ``loaded``) and the "... N more lines" row when lines remain."""
        if loaded.token != self._token:
            return
        ir = self.query_one("#ir-text", DataTable)
        if MORE in ir.rows:
            ir.remove_row(MORE)
        per_line = loaded.map.get("instrs", [])
        start = loaded.drawn
        for n, t in enumerate(texts, start):
            line = per_line[n] if n < len(per_line) else None
            ir.add_row(str(n + 1), t, str(line or ""), key=str(n))
        loaded.drawn = start + len(texts)
        left = len(loaded.lines) - loaded.drawn
        if left > 0:
            note = f"… {left} more lines (e, or enter here: draw them all)"
            ir.add_row("", Text(note, style="bold yellow"), "", key=MORE)

    def more_lines(self) -> int:
        """How many lines of the shown stage are not drawn yet."""
        return len(self._loaded.lines) - self._loaded.drawn if self._loaded else 0

    def _draw_rest(self, loaded: Loaded) -> None:
        """(thread) Highlight and draw the lines not drawn yet, ``CHUNK`` at a time, until the choice moves on."""
        start = loaded.drawn
        for i in range(start, len(loaded.lines), CHUNK):
            if loaded.token != self._token:
                return
            self.app.call_from_thread(self._append, loaded, highlight(loaded.stage, loaded.lines[i : i + CHUNK]))

    # -- actions -------------------------------------------------------------------------------------------------
    def action_stage(self, delta: int) -> None:
        """Show the previous (-1) or the next (1) stage of the launch (``,`` / ``.``)."""
        stages = self.stages()
        if not stages:
            return
        i = stages.index(self._stage) if self._stage in stages else 0
        self.choose(stages[(i + delta) % len(stages)])

    def choose(self, stage: str, launch: int | None = None) -> None:
        """Show ``stage`` (``ttir``, ``ttgir``, ``llir``, ``ptx``, ``sass``) of launch number ``launch`` (default:
        the one shown); a stage the launch does not have is ignored."""
        if launch is not None and 0 <= launch < len(self._kernels):
            self._launch = launch
        if stage in self.stages():
            self._stage = stage
        self._refresh()

    def action_show_all(self) -> None:
        """Draw every line of the stage shown (``e``), a chunk at a time on a worker."""
        loaded = self._loaded
        if loaded is None or self.more_lines() <= 0:
            return
        ir = self.query_one("#ir-text", DataTable)
        if MORE in ir.rows:
            ir.update_cell(MORE, ir.ordered_columns[1].key, Text(f"drawing {self.more_lines()} more lines…", "yellow"))
        self.app.run_worker(
            lambda: self._draw_rest(loaded),
            thread=True,
            group="ir-rest",
            exclusive=True,
            description=f"drawing the {LABELS[loaded.stage]} of {loaded.path}",
            exit_on_error=False,
        )

    @on(Tabs.TabActivated, "#ir-stages")
    def _stage_tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tab.id:
            self.choose(event.tab.id.removeprefix("ir-"))

    @on(Select.Changed, "#ir-launch")
    def _launch_changed(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, int) and event.value != self._launch:
            self._launch = event.value
            self._refresh()

    # -- source <-> stage ----------------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "ir-text" and event.row_key.value == MORE:
            event.stop()
            self.action_show_all()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self._syncing or event.row_key is None or event.row_key.value in (None, MORE) or self._loaded is None:
            return
        event.stop()
        src, ir = self.query_one("#ir-src", DataTable), self.query_one("#ir-text", DataTable)
        self._syncing = True
        try:
            if event.data_table is src:
                rows = self.rows_for_line(int(event.row_key.value))
                drawn = [r for r in rows if r < self._loaded.drawn]
                if drawn:
                    ir.move_cursor(row=ir.get_row_index(str(drawn[0])))
            elif event.data_table is ir:
                line = self.line_of(int(event.row_key.value))
                if line is not None and str(line) in src.rows:
                    src.move_cursor(row=src.get_row_index(str(line)))
        finally:
            self._syncing = False

    def rows_for_line(self, line: int) -> list[int]:
        """The rows (0-based lines of the shown stage) that its line info links to source line ``line``."""
        return list(self._loaded.map.get("lines", {}).get(str(line), [])) if self._loaded else []

    def line_of(self, row: int) -> int | None:
        """The source line that row ``row`` of the shown stage comes from (None: no line info, or no such row)."""
        per_line = self._loaded.map.get("instrs", []) if self._loaded else []
        return per_line[row] if 0 <= row < len(per_line) else None

    def text_of_stage(self) -> str:
        """The drawn lines of the shown stage, joined (for tests and copying)."""
        return "\n".join(self._loaded.lines[: self._loaded.drawn]) if self._loaded else ""
