"""The Context tab: search the context index as you type, open a hit at its line.

The index (``ktui.context.index.ContextIndex``: the workspace's ``context/`` sources, its references, kernels and
dumps, and the installed ``triton`` and ``cutlass`` packages) is brought up to date in the background the first time
the tab is shown (``ktui.context.background.BackgroundIndex``, shared with the agent; incremental: unchanged files
are not read again), the status line following it (``indexing 1200/5400 files``). Searches run in a thread, the
latest query winning, so typing never waits on SQLite; one made while the update runs answers from what is indexed
so far, says ``partial`` in the status line, and is searched again when the update ends. Enter (or a click) on a
hit shows its file at the cited line in the preview. ``lookup(query, kind)`` fills the box from elsewhere: the SASS
tab's ``i`` looks up the instruction under its cursor in the PTX ISA (``ktui.context.isa.isa_query``).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from ktui.context.background import BackgroundIndex, SearchResult
from ktui.context.index import ContextError, Hit, Progress, resolve_citation

MAX_HITS = 30
PREVIEW_LINES = 400  # the preview holds this many lines around the hit (a 20,000-line header stays cheap)


class ContextPanel(Vertical):
    """A query box, the ranked hits (``path:line``, kind, what it defines) and a preview of the selected one."""

    DEFAULT_CSS = """
    ContextPanel #context-query { height: 3; }
    ContextPanel #context-status { height: 1; color: $text-muted; }
    ContextPanel #context-body { height: 1fr; }
    ContextPanel #context-hits { width: 2fr; height: 1fr; }
    ContextPanel #context-preview { width: 3fr; height: 1fr; }
    """

    def __init__(self, root: Path, **kwargs: Any):
        super().__init__(**kwargs)
        self.root = root
        self.hits: list[Hit] = []
        self.kind: str | None = None
        self.partial: Progress | None = None  # where the index's update was when the hits shown were searched
        self._ready = False  # the update the panel follows has ended
        self._following = False
        self._timer: Timer | None = None
        self._index_line = ""
        self._hits_line = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the context: cutlass, CuTeDSL, Triton, PTX, your dumps", id="context-query")
        yield Static("", id="context-status")
        with Horizontal(id="context-body"):
            yield OptionList(id="context-hits")
            yield TextArea("", id="context-preview", read_only=True, show_line_numbers=True)

    # -- the index -----------------------------------------------------------------------------------------------
    @property
    def background(self) -> BackgroundIndex:
        """The process's background index of this workspace (shared with the agent's ``search_context``)."""
        return BackgroundIndex.for_workspace(self.root)

    def ensure_index(self) -> None:
        """Start the index's update in the background (once per panel; an update the agent started is followed
        instead) and follow it in the status line (``indexing 1200/5400 files``). Never waits: searches answer
        meanwhile, marked partial."""
        if self._following or self._ready:
            return
        self._following = True
        self.background.start()
        self._index_line = "indexing the context…"
        self._render_status()
        self._timer = self.set_interval(0.25, self._poll)

    def _poll(self) -> None:
        """The update's progress to the status line; when it has ended, the summary and the current query again
        (a complete answer now)."""
        bg = self.background
        p = bg.progress()
        if p is not None:
            self._index_line = p.line()
            self._render_status()
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._following = False
        if bg.error:
            self._index_failed(bg.error)
            return
        st = bg.stats
        line = f"{bg.chunks:,} chunks indexed"
        if st is not None:
            line += f" ({st.chunked} files read now, {st.unchanged} unchanged, {st.seconds:.1f} s)"
        if bg.failed:
            line += f"; {bg.failed} files skipped (ktui context list)"
        self._index_done(line)

    def _index_done(self, line: str) -> None:
        self._ready = True
        self._index_line = line
        self._render_status()
        box = self.query_one("#context-query", Input)
        if box.value.strip():
            self._run_search(box.value, self.kind)

    def _index_failed(self, why: str) -> None:
        self._index_line = f"the context index is not available: {why}"
        self._render_status()

    def _status(self, line: str) -> None:
        self._hits_line = line
        self._render_status()

    def _render_status(self) -> None:
        parts = [x for x in (self._hits_line, self._index_line) if x]
        self.query_one("#context-status", Static).update(Text(" · ".join(parts)))

    # -- searching -----------------------------------------------------------------------------------------------
    def lookup(self, query: str, kind: str | None = None) -> None:
        """Search ``query`` (in ``kind``: code, docs, ptx, dumps; None for all) as if it had been typed."""
        self.kind = kind
        box = self.query_one("#context-query", Input)
        box.focus()  # (focus left in another tab's pane would switch the tabs back to it)
        box.value = query  # fires Input.Changed, which searches

    @on(Input.Changed, "#context-query")
    def _changed(self, event: Input.Changed) -> None:
        self._search(event.value, self.kind)

    @on(Input.Submitted, "#context-query")
    def _submitted(self, event: Input.Submitted) -> None:
        hits = self.query_one("#context-hits", OptionList)
        if hits.option_count:
            hits.focus()
            hits.highlighted = 0

    def _search(self, query: str, kind: str | None) -> None:
        if not query.strip():
            self._show_hits(query, SearchResult([], None))
            return
        self.ensure_index()
        self._run_search(query, kind)

    @work(thread=True, exclusive=True, group="context-search")
    def _run_search(self, query: str, kind: str | None) -> None:
        try:
            res = self.background.search(query, kind=kind, n=MAX_HITS)
            if not res.hits and kind is not None:  # nothing of that kind (no PTX ISA added): every kind
                res = self.background.search(query, kind=None, n=MAX_HITS)
        except (ContextError, OSError, sqlite3.Error) as exc:
            self.app.call_from_thread(self._status, f"search failed: {exc}")
            return
        self.app.call_from_thread(self._show_hits, query, res)

    def _show_hits(self, query: str, res: SearchResult) -> None:
        if query != self.query_one("#context-query", Input).value:
            return  # an older query's answer: the box moved on
        hits = res.hits
        self.hits, self.partial = hits, res.partial
        box = self.query_one("#context-hits", OptionList)
        box.clear_options()
        for i, h in enumerate(hits):
            label = Text(h.cite, style="bold")
            label.append(f"  {h.kind}", style="dim")
            if h.symbol:
                label.append(f"  {h.sym_kind} {h.symbol}", style="cyan")
            box.add_option(Option(label, id=str(i)))
        line = f"{len(hits)} hits for {query!r}" if query.strip() else ""
        if line and res.partial is not None:
            line += f" (partial: {res.partial.line()}; searched again when it ends)"
        self._status(line)
        if hits:
            self.open_hit(0)

    @on(OptionList.OptionHighlighted, "#context-hits")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_id is not None:
            self.open_hit(int(event.option_id))

    def open_hit(self, i: int) -> None:
        """Show hit ``i``'s file in the preview with the cursor on its cited line."""
        if not 0 <= i < len(self.hits):
            return
        h = self.hits[i]
        path = self.path_of(h)
        preview = self.query_one("#context-preview", TextArea)
        if path is None:
            preview.load_text(h.snippet)
            return
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError as exc:
            preview.load_text(f"{h.cite}: {exc}")
            return
        start = max(0, h.line - 1 - PREVIEW_LINES // 4)
        preview.load_text("\n".join(lines[start : start + PREVIEW_LINES]))
        preview.line_number_start = start + 1
        row = max(0, h.line - 1 - start)
        preview.move_cursor((row, 0), center=True)
        preview.border_title = h.cite

    def open_cited(self, cited: str) -> bool:
        """Show the file a ``path:line[#anchor]`` citation names, at its line (False when it names no readable
        file: outside the workspace and every context source)."""
        m = re.match(r"^(.*):(\d+)(?:#[\w.-]+)?$", cited)
        if not m:
            return False
        rel, line = m.group(1), int(m.group(2))
        hit = Hit(rel, line, line, "", "", "", "", "", "cited", 0.0)
        path = self.path_of(hit)
        if path is None:
            self._status(f"{cited}: no such file in the workspace or the context")
            return False
        self.hits = [hit]
        self.open_hit(0)
        self._status(f"opened {cited}")
        return True

    def path_of(self, h: Hit) -> Path | None:
        """The file a hit cites: in the workspace, else in a context source or an installed package (read-only)."""
        local = (self.root / h.path).resolve()
        if local.is_file() and (self.root.resolve() in local.parents):
            return local
        return resolve_citation(self.root, h.path)
