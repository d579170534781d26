"""``ktui replay SESSION``: a recorded session, read-only, scrubbed event by event.

The screen is a function of one number, the position ``i`` (1 to the number of records): every panel shows
``fold(records[:i])`` (``ktui.sessions.fold``), the session's state right after its ``i``-th record. Nothing runs
and nothing is written: no workers, no watcher, no log file; the recorded sources are read from the session's
``blobs/`` to show an edit's diff.

The panels are the main screen's own widgets, fed from the fold: the rung ladder (``LadderTable``), the Accuracy and
Timings tables, the Details text and the chat pane (``ChatPane``, its input and approval bar switched off). Beside
them: the versions' timeline (each run, its verdict and speedup once the position has reached it; Enter jumps to
it), the session's box (device, model, tokens, cost, workers, queue), the latest edit with its diff, the notices,
and the position line (``event 12/240 · 14:03:22 · LadderFinished softmax/v2``). Problems reading the log (a
truncated last line, a corrupt line in the middle) are a notice above the panels; the rest replays.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static, TabbedContent, TabPane

from ktui.agent.config import AgentConfig
from ktui.agent.events import ChatReplyDone
from ktui.core import report
from ktui.core.events import FirstVerdict
from ktui.core.results import device_label
from ktui.core.workspace import KernelRef
from ktui.sessions.fold import ChatEntry, ReplayState, Timeline, VersionRun, decode, step, timeline
from ktui.sessions.log import LogRead, Record
from ktui.tui.chat import ApprovalBar, ChatPane
from ktui.tui.state import VersionState
from ktui.tui.widgets import AccuracyTable, LadderTable, TimingsTable, accuracy_notes, details_text

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
"""Autoplay speeds, events per second (+ and - move along them)."""
DEFAULT_SPEED = 4.0
CHECKPOINT = 64
"""A state is kept every ``CHECKPOINT`` records; any other is folded from the one before it (at most 63 steps)."""

REPLAY_KEYS = (  # keys (comma-separated), action, footer label, shown in the footer, command palette help
    ("right,l", "step(1)", "Step", True, "One event forward (right, l)"),
    ("left,h", "step(-1)", "Back", True, "One event back (left, h)"),
    ("n", "jump('results', 1)", "Next result", True, "The next ladder result (n)"),
    ("p", "jump('results', -1)", "Prev result", False, "The previous ladder result (p)"),
    ("m", "jump('messages', 1)", "Next message", True, "The next chat message (m)"),
    ("M", "jump('messages', -1)", "Prev message", False, "The previous chat message (M)"),
    ("e", "jump('edits', 1)", "Next edit", True, "The next kernel or reference edit (e)"),
    ("E", "jump('edits', -1)", "Prev edit", False, "The previous kernel or reference edit (E)"),
    ("space", "toggle_play", "Play/pause", True, "Autoplay on or off (space)"),
    ("plus,equals_sign", "speed(1)", "Faster", True, "Autoplay faster: more events per second (+)"),
    ("minus,underscore", "speed(-1)", "Slower", False, "Autoplay slower: fewer events per second (-)"),
    ("g,home", "goto_first", "First", False, "The first event (g)"),
    ("G,end", "goto_last", "Last", False, "The last event (G)"),
    ("q", "quit", "Quit", True, ""),
)

TIMELINE_COLUMNS = (("#", 3), ("version", 14), ("verdict", 14), ("at", 8))
"""The timeline's columns and widths: the time last, so that a narrow screen cuts it before the verdict."""

TABS = ("Accuracy", "Timings", "Details", "Edit", "Notices")  # keys 1 to 5

REPLAY_BINDINGS: list[BindingType] = [
    *[Binding(keys, action, label, show=show, priority=True) for keys, action, label, show, _ in REPLAY_KEYS],
    *[Binding(str(i), f"show_tab('tab-{t.lower()}')", f"{t} tab", show=False) for i, t in enumerate(TABS, 1)],
]


class Advance(Message):
    """Autoplay's tick: one event forward (posted by the timer, handled on the app's queue like a key)."""


def clock(t: float | None) -> str:
    """``14:03:22``: a record's time (seconds since the epoch) in local time; ``--:--:--`` for None."""
    return time.strftime("%H:%M:%S", time.localtime(t)) if t is not None else "--:--:--"


def describe(record: Record) -> str:
    """What one record is, in a few words: ``LadderFinished softmax/v2 ✓ 1.23x``, ``ChatMessage user: make it
    faster``, ``source kernels/softmax/v2.py``, ``session start``."""
    data = record.data
    if record.type == "session":
        return "session start" + (f" · {data['model']}" if isinstance(data.get("model"), str) and data["model"] else "")
    if record.type == "source":
        return f"source {data.get('path', '?')} ({data.get('role', '?')})"
    if record.type == "end":
        return f"end {data.get('reason', '')}".rstrip()
    ev = decode(record)
    if ev is None:
        return record.type
    key = getattr(ev, "key", None)
    words = [record.type]
    if isinstance(key, str):
        words.append(key)
    rung = getattr(ev, "rung", None)
    if isinstance(rung, str):
        words.append(rung)
    result = getattr(ev, "result", None)
    if record.type == "LadderFinished" and result is not None:
        words.append(report.verdict(result)[0])
    elif record.type == "RungFinished" and result is not None:
        words.append(result.status.value)
    for name in ("role", "name", "state", "level"):
        v = getattr(ev, name, None)
        if isinstance(v, str) and v:
            words.append(v)
    text = next((v for v in (getattr(ev, a, None) for a in ("text", "message", "path", "summary")) if v), None)
    line = " ".join(words)
    if isinstance(text, str) and text.strip():
        first = text.strip().splitlines()[0]
        line += f": {first[:60]}" + ("…" if len(first) > 60 else "")
    return line


@dataclass(frozen=True)
class TimelineRow:
    """One row of the versions' timeline: a run (``run``) or a cancelled run (``cancel_*``), at record ``index``."""

    index: int
    key: str
    t: float
    run: VersionRun | None = None
    cancel_rung: str = ""
    number: int = 0


class ReplayApp(App[None]):
    """The read-only replay of one recorded session.

    Args:
        log: the session's log as ``ktui.sessions.log.read_log`` read it.
        session_dir: the session's folder (its ``blobs/`` give an edit's sources); default the log's folder.
        position: where to start (1: the first record; clamped; None: the first).
        speed: autoplay's events per second.
    """

    CSS_PATH = [Path(__file__).with_name("app.tcss"), Path(__file__).with_name("replay.tcss")]
    TITLE = "ktui replay"
    BINDINGS = REPLAY_BINDINGS
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (160, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]

    def __init__(
        self,
        log: LogRead,
        session_dir: Path | None = None,
        position: int | None = None,
        speed: float = DEFAULT_SPEED,
    ):
        super().__init__()
        self.log_read = log
        self.records: list[Record] = list(log.records)
        self.session_dir = session_dir or log.path.parent
        self.timeline: Timeline = timeline(self.records)
        self._checkpoints: list[ReplayState] = []
        s = ReplayState()
        for i, rec in enumerate(self.records):
            if i % CHECKPOINT == 0:
                self._checkpoints.append(s)
            s = step(s, rec)
        self.final = s
        self._last_key: list[str | None] = [None]  # [i]: the version of the latest ladder record in records[:i]
        for rec in self.records:
            self._last_key.append(self._key_of(rec) or self._last_key[-1])
        self.position = self._clamp(1 if position is None else position)
        self.speed = speed
        self.playing = False
        self.selected: str | None = None
        self._timer: Timer | None = None
        self._rows = self._timeline_rows()
        self._shown_rows: dict[int, tuple[Any, ...]] = {}
        self._chat_shown: list[tuple[int, int, int]] = []  # per drawn chat entry: (index, updated, children before)
        self._blobs: dict[str, str | None] = {}
        self._drawn: dict[str, Any] = {}  # per panel, what it was last drawn from (unchanged: not drawn again)
        meta = log.meta or {}
        model = meta.get("model") if isinstance(meta.get("model"), str) else None
        self._model = model or ""
        self.chat_config = AgentConfig(model=model or "(no model)")

    # -- the fold ------------------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """How many records the log has."""
        return len(self.records)

    def _clamp(self, i: int) -> int:
        return max(min(i, self.n), 1 if self.n else 0)

    def state_at(self, i: int) -> ReplayState:
        """``fold(records[:i])``, from the checkpoint before ``i``."""
        i = max(0, min(i, self.n))
        if i == self.n:
            return self.final
        base = i // CHECKPOINT
        s = self._checkpoints[base] if base < len(self._checkpoints) else ReplayState()
        for rec in self.records[base * CHECKPOINT : i]:
            s = step(s, rec)
        return s

    @property
    def state(self) -> ReplayState:
        """The state as of the current position."""
        return self.state_at(self.position)

    @property
    def current(self) -> Record | None:
        """The record at the current position (the last one folded), None before any."""
        return self.records[self.position - 1] if self.position else None

    def position_line(self) -> str:
        """``event 12/240 · 14:03:22 · LadderFinished softmax/v2 ✓ 1.23x``."""
        rec = self.current
        if rec is None:
            return "event 0/0 · the log has no record"
        return f"event {self.position}/{self.n} · {clock(rec.t)} · {describe(rec)}"

    def _timeline_rows(self) -> list[TimelineRow]:
        rows = [TimelineRow(r.index, r.key, r.t, run=r) for r in self.timeline.versions]
        rows += [TimelineRow(c.index, c.key, c.t, cancel_rung=c.rung or "?") for c in self.final.cancels]
        return [replace(r, number=i) for i, r in enumerate(sorted(rows, key=lambda r: r.index), 1)]

    # -- layout ----------------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="notice")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield DataTable(id="timeline", cursor_type="row", zebra_stripes=False)
                yield Static(id="info")
            with Vertical(id="right"):
                yield LadderTable(id="ladder")
                with TabbedContent(id="tabs"):
                    with TabPane("Accuracy", id="tab-accuracy"):
                        yield AccuracyTable(id="accuracy")
                        yield Static(id="accuracy-notes")
                    with TabPane("Timings", id="tab-timings"):
                        yield TimingsTable(id="timings")
                    with TabPane("Details", id="tab-details"):
                        with VerticalScroll():
                            yield Static(id="details")
                    with TabPane("Edit", id="tab-edit"):
                        with VerticalScroll():
                            yield Static(id="edit")
                    with TabPane("Notices", id="tab-notices"):
                        with VerticalScroll():
                            yield Static(id="notices")
                yield ChatPane(self.chat_config, id="chat")
        yield Static(id="position")
        yield Footer()

    async def on_mount(self) -> None:
        meta = self.log_read.meta or {}
        sid = meta.get("id") if isinstance(meta.get("id"), str) else self.session_dir.name
        self.sub_title = f"{sid} · read-only"
        table = self.query_one("#timeline", DataTable)
        table.border_title = "versions"
        for name, width in TIMELINE_COLUMNS:
            table.add_column(name, key=name, width=width)
        for row in self._rows:
            table.add_row(*self._row_cells(row, done=False), key=str(row.index))
        self.query_one("#info").border_title = "session"
        self.query_one("#ladder").border_title = "rung ladder"
        chat = self.query_one(ChatPane)
        chat.query_one("#chat-input", Input).disabled = True  # read-only: nothing goes to a model
        chat.query_one("#chat-input", Input).display = False
        bar = chat.query_one(ApprovalBar)
        bar.disabled = True  # the recorded approval shows in the log; y/n decide nothing here
        await chat.mount(Static(id="chat-streaming"), after="#chat-log")
        chat.display = bool(self.final.chat or self.final.streaming or self._model)  # (a `ktui run`: no chat)
        self._notice_problems()
        table.focus()
        await self.show()

    def _notice_problems(self) -> None:
        """The log's problems (``read_log``'s and the records the fold skipped) above the panels, and a toast."""
        problems = [str(p) for p in self.log_read.problems] + list(self.final.problems)
        notice = self.query_one("#notice", Static)
        notice.display = bool(problems)
        if not problems:
            return
        head = f"{len(problems)} problem{'s' if len(problems) != 1 else ''} reading {self.log_read.path.name}"
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more (Notices tab)" if len(problems) > 3 else "")
        notice.update(Text.assemble(("⚠ ", "bold yellow"), (head, "bold"), f": {shown}; the rest replays"))
        self.notify(f"{head}; the rest replays", severity="warning", timeout=8)

    # -- drawing -----------------------------------------------------------------------------------------------------
    async def show(self) -> None:
        """Draw every panel as of the current position; the version shown is the one of the latest ladder event
        (Enter on a row of the timeline jumps to that run)."""
        s = self.state
        self.selected = self._last_key[self.position]
        self._show_position()
        self._show_timeline()
        self._show_info(s)
        self._show_version(s)
        self._show_edit(s)
        self._show_notices(s)
        await self._show_chat(s)

    @staticmethod
    def _key_of(rec: Record | None) -> str | None:
        if rec is None or rec.type not in (
            "LadderStarted",
            "RungStarted",
            "RungProgress",
            "RungFinished",
            "FirstVerdict",
            "LadderFinished",
        ):
            return None
        key = rec.data.get("key")
        return key if isinstance(key, str) and "/" in key else None

    def _show_position(self) -> None:
        play = f"▶ playing {self.speed:g} ev/s" if self.playing else f"⏸ {self.speed:g} ev/s"
        self.query_one("#position", Static).update(
            Text.assemble((self.position_line(), "bold"), "   ", (play, "yellow" if self.playing else "dim"))
        )

    def _row_cells(self, row: TimelineRow, done: bool, current: bool = False) -> tuple[Any, ...]:
        mark = "▶" if current else ""
        style = "" if done else "dim"
        if not done:
            verdict: Text = Text("…", "dim")
        elif row.run is not None:
            vs = report.verdict(row.run.result)
            carried = row.run.result.carried_from  # a copy's verdict is its source's run (new-user trial 20 L5)
            verdict = Text(vs[0] + (f" as {carried}" if carried else ""), vs[1])
        else:
            verdict = Text(f"◌ cancelled ({row.cancel_rung})", "yellow")
        return (Text(f"{mark}{row.number}", style), Text(row.key, style), verdict, Text(clock(row.t), style))

    def _show_timeline(self) -> None:
        """Each run's row: its verdict once the position has passed it, ``▶`` on the latest; the cursor follows the
        selected version's latest run."""
        table = self.query_one("#timeline", DataTable)
        done = [r for r in self._rows if r.index < self.position]
        latest = done[-1].index if done else None
        for row in self._rows:
            cells = self._row_cells(row, row.index < self.position, row.index == latest)
            plain = tuple(str(c) for c in cells) + (cells[2].style,)
            if self._shown_rows.get(row.index) != plain:
                self._shown_rows[row.index] = plain
                for (name, _), cell in zip(TIMELINE_COLUMNS, cells):
                    table.update_cell(str(row.index), name, cell)
        mine = [r for r in done if r.key == self.selected]
        if mine:
            target = mine[-1].number - 1
            if table.cursor_row != target:
                table.move_cursor(row=target, animate=False)

    def _show_info(self, s: ReplayState) -> None:
        meta = s.meta or {}
        dev = dict(s.device) if s.device else (s.runs[0].result.device if s.runs else {})
        t = Text()
        t.append("device ", "dim")
        t.append((str(dev.get("name")) if dev.get("type") == "cuda" else device_label(dev)) if dev else "?")
        t.append("\nmodel ", "dim")
        t.append(self._model or s.model or "none")
        tokens = s.session_tokens or s.prompt_tokens + s.completion_tokens
        t.append("\ntokens ", "dim")
        t.append(f"{tokens:,}" + (f" · {report.cost(s.cost)}" if s.cost is not None else ""))
        if meta.get("ktui_version") or meta.get("version"):
            t.append("\nktui ", "dim")
            t.append(str(meta.get("ktui_version") or meta.get("version")))
        if s.workers:
            t.append("\nworkers ", "dim")
            t.append(" ".join(f"{role}:{w.state}" for role, w in sorted(s.workers.items())))
        q = s.queue
        if q is not None and (q.running or q.waiting):
            t.append("\nrunning ", "dim")
            t.append(f"{q.running or '-'}{f' ({q.rung})' if q.rung else ''}")
            if q.waiting:
                t.append(f" · waiting {', '.join(q.waiting)}", "yellow")
        if s.agent is not None:
            t.append("\nagent ", "dim")
            t.append(f"{s.agent.state} {s.agent.detail}".rstrip())
        if s.ended:
            t.append(f"\nended: {s.end_reason or 'cleanly'}", "green")
        elif self.position == self.n and not self.final.ended:
            t.append("\nthe log ends here without an end record (cut short)", "yellow")
        self.query_one("#info", Static).update(t)

    def version_state(self, s: ReplayState, key: str) -> VersionState:
        """The ``VersionState`` (what the main screen's panels draw) of ``key`` in ``s``: its latest result, the
        run in flight with its finished rungs, the rung under way and its first verdict, whether it waits."""
        st = VersionState(key, result=s.results.get(key))
        live = s.live.get(key)
        if live is not None:
            st.start(live.rungs, live.run_id)
            st.live = {r.name: r for r in live.finished}
            st.running_rung = live.rung
            if live.first_verdict is not None:
                fv = live.first_verdict
                st.first = (fv.status, self._first_cases(key, live.run_id), fv.summary)
        st.queued = s.queue is not None and key in s.queue.waiting and live is None
        return st

    def _first_cases(self, key: str, run_id: int) -> int:
        """How many cases the first verdict of run ``run_id`` of ``key`` judged (its ``FirstVerdict`` record)."""
        for rec in reversed(self.records[: self.position]):
            if rec.type == "FirstVerdict" and rec.data.get("key") == key and rec.data.get("run_id") == run_id:
                ev = decode(rec)
                return ev.cases if isinstance(ev, FirstVerdict) else 0
            if rec.type == "LadderStarted" and rec.data.get("key") == key:
                break
        return 0

    def _show_version(self, s: ReplayState) -> None:
        key = self.selected
        problem = key.split("/", 1)[0] if key else None
        seen = (
            key,
            s.queue,
            [(k, s.results.get(k), s.live.get(k)) for k in [*s.history, *s.live] if k.split("/", 1)[0] == problem],
        )
        if seen == self._drawn.get("version"):
            return  # (what these panels draw is unchanged: a chat event, a notice...)
        self._drawn["version"] = seen
        st = self.version_state(s, key) if key else None
        ladder = self.query_one(LadderTable)
        ladder.show(st)
        ladder.border_subtitle = key or "no version yet"
        result = st.result if st else None
        self.query_one(AccuracyTable).show(result)
        notes = accuracy_notes(result)
        self.query_one("#accuracy-notes", Static).update(notes)
        self.query_one("#accuracy-notes").display = bool(notes)
        root = Path(str((s.meta or {}).get("workspace") or "."))
        if key:
            problem = key.split("/", 1)[0]
            keys = [k for k in dict.fromkeys([*s.history, *s.live]) if k.split("/", 1)[0] == problem]
            rows = [(KernelRef(problem, k.split("/", 1)[1], root), self.version_state(s, k)) for k in keys]
            self.query_one(TimingsTable).show(problem, rows)
        else:
            self.query_one(TimingsTable).show(None, [])
        details = self.query_one("#details", Static)
        if key and result is not None:
            problem, version = key.split("/", 1)
            details.update(details_text(KernelRef(problem, version, root), st))
        elif key:
            details.update(Text(f"{key}: no result yet at this point of the session", "dim"))
        else:
            details.update(Text("No ladder has run yet at this point of the session.", "dim"))

    def _blob(self, sha: str | None) -> str | None:
        """A recorded source's text (``blobs/<sha256>``, checked against its hash), None when not kept."""
        if not sha:
            return None
        if sha not in self._blobs:
            from ktui.sessions.rerun import read_blob

            try:
                self._blobs[sha] = read_blob(self.session_dir, sha).decode("utf-8", errors="replace")
            except (OSError, ValueError):
                self._blobs[sha] = None
        return self._blobs[sha]

    def _show_edit(self, s: ReplayState) -> None:
        """The latest edit as of the position: the file, its role and hash, and its diff against the file's
        previous content (the file itself the first time the session saw it)."""
        view = self.query_one("#edit", Static)
        if self._drawn.get("edit") == len(s.edits):
            return
        self._drawn["edit"] = len(s.edits)
        if not s.edits:
            view.update(Text("No edit yet at this point of the session.", "dim"))
            return
        e = s.edits[-1]
        head = Text.assemble(
            (f"edit {len(s.edits)}/{len(self.final.edits)} ", "bold"),
            (e.path, "bold cyan"),
            f" ({e.role or '?'}) · {clock(e.t)} · sha256 {e.sha256[:12]}",
            (f" (was {e.previous[:12]})" if e.previous else " (first seen)", "dim"),
            "\n",
        )
        new, old = self._blob(e.sha256), self._blob(e.previous)
        if new is None:
            view.update(Text.assemble(head, ("its content is not in the session's blobs/", "yellow")))
            return
        if e.previous is None or old is None:
            body: Any = Syntax(new, "python", theme="ansi_dark", line_numbers=True, word_wrap=True)
        else:
            diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), e.path, e.path))
            body = Syntax(diff or "(no change)", "diff", theme="ansi_dark", word_wrap=True)
        from rich.console import Group

        view.update(Group(head, body))

    def _show_notices(self, s: ReplayState) -> None:
        if self._drawn.get("notices") == len(s.notices):
            return
        self._drawn["notices"] = len(s.notices)
        t = Text()
        for p in [str(p) for p in self.log_read.problems] + list(self.final.problems):
            t.append(f"log: {p}\n", "yellow")
        for ev in s.notices:
            style = {"error": "bold red", "warning": "yellow"}.get(ev.level, "")
            t.append(f"{clock(ev.at)} {ev.level}: {ev.message}\n", style)
        t.rstrip()
        self.query_one("#notices", Static).update(t if t.plain else Text("No notice yet.", "dim"))

    async def _show_chat(self, s: ReplayState) -> None:
        """The chat as of the position, through ``ChatPane.handle``: entries already drawn stay, those gone (a step
        back) or changed since (a tool call's later state) are removed and drawn again; the reply still streaming
        shows below the log."""
        chat = self.query_one(ChatPane)
        log = chat.log_view
        entries: tuple[ChatEntry, ...] = s.chat
        keep = 0
        for (index, updated, _), entry in zip(self._chat_shown, entries):
            if (index, updated) != (entry.index, entry.updated):
                break
            keep += 1
        if keep < len(self._chat_shown):
            start = self._chat_shown[keep][2]
            gone = list(log.children)[start:]
            if gone:
                await log.remove_children(gone)
            del self._chat_shown[keep:]
        for entry in entries[keep:]:
            before = len(log.children)
            await chat.handle(entry.event)
            self._chat_shown.append((entry.index, entry.updated, before))
        bar = chat.query_one(ApprovalBar)
        bar.display = False
        streaming = chat.query_one("#chat-streaming", Static)
        streaming.display = bool(s.streaming)
        streaming.update(Text.assemble(("streaming… ", "dim italic"), s.streaming[-400:]))
        if s.agent is not None:
            await chat.handle(s.agent)
        else:
            chat.border_title = "chat"
        last = next((e.event for e in reversed(entries) if isinstance(e.event, ChatReplyDone)), None)
        chat.border_subtitle = (
            report.session_usage(last) if last is not None else (self._model or s.model or "no model")
        )

    # -- actions ---------------------------------------------------------------------------------------------------
    async def goto(self, i: int) -> None:
        """Move to position ``i`` (clamped) and draw."""
        i = self._clamp(i)
        if i != self.position:
            self.position = i
            await self.show()
        if self.playing and self.position >= self.n:
            self._set_playing(False)

    async def action_step(self, delta: int) -> None:
        """One event forward (1) or back (-1)."""
        await self.goto(self.position + delta)

    async def action_jump(self, kind: str, direction: int) -> None:
        """To the next (1) or previous (-1) ladder result, chat message or edit (``kind``: ``results``,
        ``messages``, ``edits``)."""
        here = self.position - 1  # the current record's index
        found = self.timeline.next(kind, here) if direction > 0 else self.timeline.previous(kind, here)
        if found is None:
            what = {"results": "ladder result", "messages": "message", "edits": "edit"}.get(kind, kind)
            self.notify(f"no {'later' if direction > 0 else 'earlier'} {what}", timeout=2)
            return
        await self.goto(found + 1)

    async def action_goto_first(self) -> None:
        """The first event."""
        await self.goto(1)

    async def action_goto_last(self) -> None:
        """The last event."""
        await self.goto(self.n)

    async def action_toggle_play(self) -> None:
        """Autoplay on or off (from the first event again when at the last)."""
        if not self.playing and self.position >= self.n:
            await self.goto(1)  # played to the end: again from the start
        self._set_playing(not self.playing)

    def _set_playing(self, on: bool) -> None:
        self.playing = on
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if on:
            self._timer = self.set_interval(1.0 / self.speed, self._tick)
        self._show_position()

    def _tick(self) -> None:
        self.post_message(Advance())

    async def on_advance(self, message: Advance) -> None:
        if self.playing:
            await self.goto(self.position + 1)

    def action_speed(self, direction: int) -> None:
        """Autoplay faster (1) or slower (-1), along ``SPEEDS``."""
        i = min(range(len(SPEEDS)), key=lambda j: abs(SPEEDS[j] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + direction))]
        if self.playing:
            self._set_playing(True)
        self._show_position()

    def action_show_tab(self, tab: str) -> None:
        """Show a tab: Accuracy (1), Timings (2), Details (3), Edit (4), Notices (5)."""
        self.query_one(TabbedContent).active = tab

    async def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a timeline row: to that run's ladder result."""
        if event.data_table.id == "timeline" and event.row_key.value is not None:
            await self.goto(int(event.row_key.value) + 1)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for _keys, action, label, _, help_text in REPLAY_KEYS:
            if help_text:
                yield SystemCommand(label, help_text, lambda a=action: self.run_action(a))
