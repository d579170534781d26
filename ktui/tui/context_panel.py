"""The Context tab: search the context index as you type, open a hit at its line.

The index (``ktui.context.index.ContextIndex``: the workspace's ``context/`` sources, its references, kernels and
dumps, and the installed ``triton`` and ``cutlass`` packages) is brought up to date in a thread the first time the
tab is shown (incremental: unchanged files are not read again); searches run in a thread too, the latest query
winning, so typing never waits on SQLite. Enter (or a click) on a hit shows its file at the cited line in the
preview. ``lookup(query, kind)`` fills the box from elsewhere: the SASS tab's ``i`` looks up the instruction under
its cursor in the PTX ISA (``ktui.context.isa.isa_query``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from ktui.context.index import ContextError, ContextIndex, Hit, resolve_citation

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
        self._ready = False
        self._indexing = False
        self._pending: tuple[str, str | None] | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the context: cutlass, CuTeDSL, Triton, PTX, your dumps", id="context-query")
        yield Static("", id="context-status")
        with Horizontal(id="context-body"):
            yield OptionList(id="context-hits")
            yield TextArea("", id="context-preview", read_only=True, show_line_numbers=True)

    # -- the index -----------------------------------------------------------------------------------------------
    def ensure_index(self) -> None:
        """Bring the index up to date in a thread (once per panel; later calls do nothing while it runs or after)."""
        if self._ready or self._indexing:
            return
        self._indexing = True
        self._status("indexing the context…")
        self._update_index()

    @work(thread=True, exclusive=True, group="context-index")
    def _update_index(self) -> None:
        try:
            ix = ContextIndex.for_workspace(self.root)
            try:
                st = ix.update(progress=lambda line: self.app.call_from_thread(self._status, line))
                chunks = ix.chunk_count()
                failed = len(ix.failures())
            finally:
                ix.close()
        except (ContextError, OSError) as exc:
            self.app.call_from_thread(self._index_failed, str(exc))
            return
        line = f"{chunks:,} chunks indexed ({st.chunked} files read now, {st.unchanged} unchanged, {st.seconds:.1f} s)"
        if failed:
            line += f"; {failed} files skipped (ktui context list)"
        self.app.call_from_thread(self._index_done, line)

    def _index_done(self, line: str) -> None:
        self._ready, self._indexing = True, False
        self._status(line)
        if self._pending is not None:
            q, kind = self._pending
            self._pending = None
            self._search(q, kind)
        elif self.query_one("#context-query", Input).value.strip():
            self._search(self.query_one("#context-query", Input).value, self.kind)

    def _index_failed(self, why: str) -> None:
        self._indexing = False
        self._status(f"the context index is not available: {why}")

    def _status(self, line: str) -> None:
        self.query_one("#context-status", Static).update(Text(line))

    # -- searching -----------------------------------------------------------------------------------------------
    def lookup(self, query: str, kind: str | None = None) -> None:
        """Search ``query`` (in ``kind``: code, docs, ptx, dumps; None for all) as if it had been typed."""
        self.kind = kind
        box = self.query_one("#context-query", Input)
        box.focus()  # (focus left in another tab's pane would switch the tabs back to it)
        box.value = query  # fires Input.Changed, which searches (after the index is ready)

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
            self._show_hits(query, [])
            return
        if not self._ready:
            self._pending = (query, kind)
            self.ensure_index()
            return
        self._run_search(query, kind)

    @work(thread=True, exclusive=True, group="context-search")
    def _run_search(self, query: str, kind: str | None) -> None:
        try:
            ix = ContextIndex.for_workspace(self.root)
            try:
                hits = ix.search(query, kind=kind, n=MAX_HITS)
                if not hits and kind is not None:  # nothing of that kind (no PTX ISA added): every kind
                    hits = ix.search(query, kind=None, n=MAX_HITS)
            finally:
                ix.close()
        except (ContextError, OSError) as exc:
            self.app.call_from_thread(self._status, f"search failed: {exc}")
            return
        self.app.call_from_thread(self._show_hits, query, hits)

    def _show_hits(self, query: str, hits: list[Hit]) -> None:
        if query != self.query_one("#context-query", Input).value:
            return  # an older query's answer: the box moved on
        self.hits = hits
        box = self.query_one("#context-hits", OptionList)
        box.clear_options()
        for i, h in enumerate(hits):
            label = Text(h.cite, style="bold")
            label.append(f"  {h.kind}", style="dim")
            if h.symbol:
                label.append(f"  {h.sym_kind} {h.symbol}", style="cyan")
            box.add_option(Option(label, id=str(i)))
        if self._ready:
            self._status(f"{len(hits)} hits for {query!r}" if query.strip() else "")
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
