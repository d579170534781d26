"""The ktui app: kernel tree, rung ladder, accuracy and timings tables, and the place of the chat pane.

The app never imports torch: the ``Session`` it drives runs every kernel in worker processes and publishes what
happens on its event bus. The app posts each event to itself as one ``CoreEvent`` message and, on its own loop,
hands it to the handler that its ``{event type: handler}`` table names; it updates its panels in place. What fails
without an answer (a Textual worker) becomes a notification and a line in ``.ktui/logs/ktui.log``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane, Tree
from textual.worker import Worker
from textual.worker import WorkerState as TaskState

from ktui.agent.config import AgentConfig
from ktui.agent.events import AGENT_EVENTS, ApprovalDecided, ApprovalRequest
from ktui.core.engines import Engine
from ktui.core.events import (
    CANCELLED,
    Event,
    FileChanged,
    FirstVerdict,
    LadderFinished,
    LadderStarted,
    Notice,
    QueueChanged,
    ResultStored,
    RungFinished,
    RungProgress,
    RungStarted,
    WorkerState,
)
from ktui.core.log import close_log, get_logger, open_log
from ktui.core.results import LadderResult, RungResult, device_label, fmt_seconds
from ktui.core.scheduler import is_cancelled
from ktui.core.session import Session
from ktui.core.status import current_result, stale_policy
from ktui.core.store import LastVersion, ResultStore
from ktui.core.timeouts import LIMIT_OF, TimeoutPolicy
from ktui.core.workspace import KernelRef, Workspace
from ktui.sessions.record import Recorder, maybe_record
from ktui.sessions.resume import ResumePlan, chat_entries
from ktui.tui.chat import ChatPane
from ktui.tui.context_panel import ContextPanel
from ktui.tui.editor import open_in_editor
from ktui.tui.inside import DiffView, ProfileTable, SourceSass, TraceView
from ktui.tui.ir import IRView
from ktui.tui.keys import APP_BINDINGS, KEYS, KeysPanel, palette_commands
from ktui.tui.messages import CoreEvent
from ktui.tui.state import VersionState, stale_keys
from ktui.tui.widgets import (
    AccuracyTable,
    KernelTree,
    LadderTable,
    QueuePanel,
    TimingsTable,
    accuracy_notes,
    details_text,
)

log = get_logger("tui")
EXIT_GRACE_S = 3.0  # after SIGTERM/SIGHUP stopped the workers, the process ends by itself if the app has not


def header_subtitle(workspace: Path, title: str, device: str = "") -> str:
    """The header's subtitle: the workspace folder's name and the device (``softmax-work · device: cpu``). The
    header draws ``title — subtitle``: a workspace named like the app (the ktui repository itself, whose clone is
    ``ktui``) is not named again, so that the header reads ``ktui — device: cpu``, not ``ktui — ktui · ...``."""
    parts = [workspace.name] if workspace.name.lower() != title.lower() else []
    if device:
        parts.append(f"device: {device}")
    return " · ".join(parts)


class KtuiApp(App[None]):
    """``ktui [WORKSPACE]``: saving a kernel reruns its ladder; the panels show every version's verdict.

    Args:
        workspace: the workspace to show.
        device: ``auto``, ``cpu`` or ``cuda`` (ignored when ``session`` is given).
        session: a ready-made session (tests; ``ktui --remote``, connected first); by default one is created and
            started on mount.
        start_session: False shows stored results only, with no workers and no watcher (snapshot tests).
        agent_config: the chat's model and loop settings (``ktui.agent.config.load_config``); None: no model.
        handle_signals: SIGTERM and SIGHUP (the terminal closed) stop the session's workers and quit (``ktui``
            sets it; tests leave the test runner's handlers alone).
        record: record the session under ``sessions/`` (``ktui.sessions.record``; ``ktui`` sets it unless
            ``--no-record``; ``[sessions] record = false`` in ``ktui.toml`` turns it off too).
        resume: a ``ktui.sessions.resume.ResumePlan`` (``ktui --resume``): the chat pane shows the session's earlier
            chat and what its report says (sources missing or changed), the agent starts with its history, and
            with ``record`` the events append to its log.
        owns_session: the app stops ``session`` when it ends (on SIGTERM and SIGHUP too), as one it made.
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "ktui"
    BINDINGS = APP_BINDINGS  # ktui.tui.keys
    # The screen's classes, for app.tcss: -narrow below 100 columns, -medium below 160, -wide; -short below 30 rows.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (160, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]

    def __init__(
        self,
        workspace: Workspace,
        device: str = "auto",
        session: Session | None = None,
        start_session: bool = True,
        agent_config: AgentConfig | None = None,
        handle_signals: bool = False,
        record: bool = False,
        resume: ResumePlan | None = None,
        owns_session: bool = False,
        engine: Engine | None = None,
        timeouts: TimeoutPolicy | None = None,
    ):
        super().__init__()
        self._engine = engine  # where the session's ladders run (``ktui.core.engines``); None: the local pool
        self._timeouts = timeouts  # ``ktui --timeout``: the session's limits (None: ktui.toml's, else the defaults)
        self.resume = resume
        self.handle_signals = handle_signals
        self.record = record
        self.recorder: Recorder | None = None
        self._clocks: dict[str, tuple[str, float]] = {}  # version -> (its running rung, when it started, time.time)
        self.agent_config = agent_config or AgentConfig()
        self.chat_collapsed = not self.agent_config.configured  # no model: the chat is a one-line bar (ctrl+g)
        self._focus_before_max: Widget | None = None
        self.ws = workspace
        self._device_choice = device
        self.session = session
        self.start_session = start_session
        self.store = session.store if session else ResultStore(workspace)
        self.states: dict[str, VersionState] = {}
        self.selected: KernelRef | None = None
        self.worker_states: dict[str, str] = {}
        self._queue_state: tuple[str | None, str | None, tuple[str, ...]] = (None, None, ())
        self._unsubscribe: Callable[[], None] | None = None
        # a session passed in (tests) is stopped by whoever made it, unless it is handed over (``ktui --remote``
        # connects before the screen): then the app stops it, on a signal too
        self._owns_session = owns_session
        self._quitting = False  # q pressed: the workers are being stopped (``action_quit``)
        self._log_handler: logging.Handler | None = None
        self._handlers: dict[type[Event], Callable[[Any], Any]] = {
            LadderStarted: self._ladder_event,
            RungStarted: self._ladder_event,
            RungProgress: self._ladder_event,
            RungFinished: self._ladder_event,
            FirstVerdict: self._ladder_event,
            LadderFinished: self._ladder_finished,
            QueueChanged: self._queue,
            WorkerState: self._worker_state,
            FileChanged: self._file_changed,
            ResultStored: self._result_stored,
            Notice: self._notice,
            **{kind: self._agent_event for kind in AGENT_EVENTS},
        }

    # -- layout ------------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield KernelTree(self.ws, id="tree")
                yield QueuePanel(id="queue")
            with Vertical(id="right"):
                yield LadderTable(id="ladder")
                with TabbedContent(id="tabs"):
                    with TabPane("Accuracy", id="tab-accuracy"):
                        yield AccuracyTable(id="accuracy")
                        yield Static(id="accuracy-notes")
                    with TabPane("Timings", id="tab-timings"):
                        yield TimingsTable(id="timings")
                    with TabPane("SASS", id="tab-sass"):
                        yield SourceSass(id="sass")
                    with TabPane("Diff", id="tab-diff"):
                        yield DiffView(id="diff")
                    with TabPane("Profile", id="tab-profile"):
                        with Vertical():
                            yield ProfileTable(id="profile")
                            with VerticalScroll(id="trace-scroll"):
                                yield TraceView(id="trace")
                    with TabPane("Details", id="tab-details"):
                        with VerticalScroll(id="details-scroll"):
                            yield Static(id="details")
                    with TabPane("IR", id="tab-ir"):
                        yield IRView(id="ir")
                    with TabPane("Context", id="tab-context"):
                        yield ContextPanel(self.ws.root, id="context")
                yield ChatPane(self.agent_config, self._chat_problem, id="chat")
                yield Static(id="chat-bar")
        yield Footer()

    def on_mount(self) -> None:
        self._log_handler = open_log(self.ws.state_dir)
        self.sub_title = header_subtitle(self.ws.root, self.title)
        self.query_one("#tree").border_title = "kernels"
        self.query_one("#queue").border_title = "queue"
        self.query_one("#ladder").border_title = "rung ladder"
        self._show_chat()
        if self.resume is not None:
            self.call_after_refresh(self._show_resumed, self.resume)
        self.watch(self.screen, "maximized", self._maximized_changed, init=False)
        for k in self.ws.all_versions():
            st = self.states[k.key] = VersionState(k.key)
            st.result = current_result(self.ws, self.store, k)  # (its verdict on the files now, where kept)
            st.refresh_stale(self.ws)  # a result of code edited while ktui was closed is marked stale
        self.query_one(KernelTree).rebuild(self.states)
        last = LastVersion(self.ws).get()  # the version last worked on (selected here, or run by ktui run)
        if last in self.states:
            self.query_one(KernelTree).select_key(last)
            self.select(self._ref(last))
        else:
            self._step(1)  # the first version
        self._show_queue()
        if self.start_session:
            # Workers import torch for seconds on every core: spawn them once the first screen is drawn.
            self.call_after_refresh(self._start_session)
        if self.handle_signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._signalled, sig)
        self.set_interval(1.0, self._tick)  # the running rung's elapsed time

    def _signalled(self, signum: int) -> None:
        """SIGTERM, or SIGHUP (the terminal closed): stop the workers now (the screen may be gone), then quit. With
        the terminal gone, Textual's shutdown can block for ever writing its last escape codes to it (seen under
        tmux kill-session: the writer thread's queue full, nothing draining it), so the process ends by itself
        ``EXIT_GRACE_S`` after the workers stopped if the app has not."""
        log.warning("stopping on %s", signal.Signals(signum).name)
        if self.session is not None and self._owns_session:
            self.session.stop()
        if self.recorder is not None:
            self.recorder.close(f"stopped by {signal.Signals(signum).name}")

        def end() -> None:
            time.sleep(EXIT_GRACE_S)
            log.warning("the app did not exit within %s s of %s: ending the process", EXIT_GRACE_S, signum)
            logging.shutdown()
            os._exit(128 + signum)

        threading.Thread(target=end, name="ktui-exit", daemon=True).start()
        self.exit(return_code=128 + signum)

    def _start_session(self) -> None:
        if self.session is None:
            self.session = Session(self.ws, self._device_choice, engine=self._engine, timeouts=self._timeouts)
            self.store = self.session.store
            self._owns_session = True
        self._unsubscribe = self.session.bus.subscribe(self._post_core_event)
        device = device_label({"type": self.session.device})
        remote = getattr(self.session, "remote", "")  # ``gpu1 over SSH (me@gpu1:22)`` when the workers run there
        self.sub_title = header_subtitle(self.ws.root, self.title, f"{device} on {remote}" if remote else device)
        if self.record:
            self.recorder, warnings = maybe_record(
                self.session,
                "tui",
                ["ktui", *sys.argv[1:]],
                model=self.agent_config.model,
                secret_env=[self.agent_config.api_key_env or ""],
                resume_dir=self.resume.folder if self.resume is not None else None,
            )
            for w in warnings:
                self.notify(w, severity="warning", timeout=10)
        self.session.start()
        chat = self.query_one(ChatPane)
        chat.start_agent(self.ws, self.session)
        if self.resume is not None and chat.agent is not None:
            self.resume.apply(chat.agent)
        policy, warning = stale_policy(self.ws.root)  # [tui] stale in ktui.toml: "run" (default) or "mark"
        if warning:
            self.notify(warning, severity="warning", timeout=10)
        # stale versions run at start-up in the session that runs this workspace's saves only: a second ktui on the
        # workspace shows the first one's results and runs what it is asked (new-user trial 26, F23: it queued and
        # ran the stale v1 on its own, beside the first one's run of it)
        if policy == "run" and self.session.runs_saves:
            self.action_run_stale()

    async def action_quit(self) -> None:
        """Quit (q): the workers this app owns are stopped first, with a notice (stopping them takes seconds: new-user
        trial 20 L3 saw a blank screen for 3.7 s and killed the terminal), then the app exits."""
        if self._quitting:
            return
        if self.session and self._owns_session:
            self._quitting = True
            self.notify("stopping the workers…", timeout=30)
            session = self.session

            def stop_then_exit() -> None:  # off the app's message pump, so that the notice is drawn meanwhile
                try:
                    session.stop()
                finally:
                    self.call_from_thread(self.exit)

            self.run_worker(stop_then_exit, thread=True, group="quit", description="stopping the workers")
            return
        self.exit()

    def on_unmount(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()
        if self.session and self._owns_session:
            self.session.stop()
        if self.recorder is not None:
            self.recorder.close("done")
        if self._log_handler is not None:
            close_log(self._log_handler)

    def _post_core_event(self, event: Event) -> None:
        """The bus subscriber (any thread): carry ``event`` onto the UI loop."""
        self.post_message(CoreEvent(event))

    async def on_core_event(self, message: CoreEvent) -> None:
        if not self.is_running:
            # Shutting down: the screens' widgets are being removed while the bus (a session this app does not own
            # stops after it) may still post; a handler would not find the tree (CI of b7c2d9b, test_status_init).
            return
        handler = self._handlers.get(type(message.event))
        if handler is not None:
            done = handler(message.event)
            if inspect.isawaitable(done):
                await done

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """Every Textual worker that raised (the diff, the agent's exchange): a notification and the log."""
        if event.state is not TaskState.ERROR:
            return
        err = event.worker.error
        what = event.worker.description or event.worker.name or "a background task"
        log.error("%s failed", what, exc_info=err if isinstance(err, BaseException) else None)
        self.notify(
            f"{what} failed: {type(err).__name__}: {err} (traceback in .ktui/logs/ktui.log)",
            severity="error",
            timeout=10,
        )

    # -- helpers -----------------------------------------------------------------------------------------------
    def _ref(self, key: str) -> KernelRef:
        problem, version = key.split("/", 1)
        return KernelRef(problem, version, self.ws.root)

    def state(self, key: str) -> VersionState:
        """The screen's state of version ``key`` (made on first use)."""
        return self.states.setdefault(key, VersionState(key))

    def select(self, k: KernelRef | None) -> None:
        self.selected = k
        if k is not None and self.start_session:  # (a test's app without a session leaves the file alone)
            LastVersion(self.ws).set(k.key)
        self._show_selected()

    def _show_selected(self) -> None:
        k = self.selected
        st = self.states.get(k.key) if k else None
        self._show_ladder(st)
        self.query_one(AccuracyTable).show(st.result if st else None)
        self._show_accuracy_notes(st)
        self._show_timings()
        self.query_one(SourceSass).show(self.ws.root, st.result if st else None)
        self.query_one(IRView).show(self.ws.root, st.result if st else None)
        self.query_one(ProfileTable).show(st.result if st else None)
        self.query_one(TraceView).show(st.result if st else None)
        self.query_one(DiffView).show(self.ws, k, self._results())
        self.query_one("#details", Static).update(details_text(k, st))
        self.query_one("#ladder").border_subtitle = k.key if k else ""

    def _results(self) -> dict[str, LadderResult | None]:
        return {key: st.result for key, st in self.states.items()}

    def _show_timings(self) -> None:
        k = self.selected
        if k is None:
            return
        rows = [(v, self.state(v.key)) for v in self.ws.versions(k.problem)]
        self.query_one(TimingsTable).show(k.problem, rows)

    def _show_accuracy_notes(self, st: VersionState | None, rung: RungResult | None = None) -> None:
        """The notes under the Accuracy table (``accuracy_notes``: of ``rung``, a run's correctness rung as it
        ends, else of the last result), led while a run is under way and its correctness has not ended by a line
        saying the table is the last finished run's (new-user trial 20 L8: it showed the previous content's figures
        during a run, and v1's under v2's title after ``n``)."""
        notes = accuracy_notes(st.result if st else None, rung)
        stale = rung is None and st is not None and st.running and st.result is not None
        stale = stale and st is not None and "correctness" not in st.live
        if stale:
            lead = Text("Running now: the figures below are the last finished run's, until this run's correctness "
                        "rung ends.", "bold yellow")  # fmt: skip
            notes = Text.assemble(lead, "\n", notes) if notes else lead
        # and the table itself dimmed: its rows read as this run's under a lead scrolled out of view (trial 29 F2)
        self.query_one(AccuracyTable).set_class(stale, "stale")
        self.query_one("#accuracy-notes", Static).update(notes)
        self.query_one("#accuracy-notes").display = bool(notes)

    def _show_queue(self) -> None:
        """The queue panel; the running version's rung and progress come from its ``VersionState``, its elapsed
        time and limit from the rung's clock."""
        running, rung, waiting = self._queue_state
        st = self.states.get(running) if running else None
        if st is not None and st.running:
            rung = st.running_rung or rung
        clock = self._clock(st)
        elapsed = f"{clock[0]:.0f}s" if clock is not None else ""  # so far
        limit = f"limit {fmt_seconds(clock[1])}s" if clock is not None and clock[1] else ""
        progress = st.progress_text() if st else ""
        seconds = clock[0] if clock is not None else None
        self.query_one(QueuePanel).render_state(
            running, rung, waiting, self.worker_states, progress, elapsed, seconds, limit
        )

    def _clock(self, st: VersionState | None) -> tuple[float, float | None] | None:
        """The running rung's seconds so far and its time limit (seconds, None when not known), or None when
        ``st`` runs no rung."""
        if st is None or not st.running or st.running_rung is None:
            return None
        clock = self._clocks.get(st.key)
        if clock is None or clock[0] != st.running_rung:
            return None
        limits = self.session.limits if self.session else {}
        return max(0.0, time.time() - clock[1]), limits.get(LIMIT_OF.get(clock[0], clock[0]))

    def _show_ladder(self, st: VersionState | None) -> None:
        clock = self._clock(st)
        self.query_one(LadderTable).show(st, *(clock or (None, None)))

    def _tick(self) -> None:
        """Once a second while a rung runs: its elapsed time in the ladder pane and the queue panel."""
        running = self._queue_state[0]
        st = self.states.get(running) if running else None
        if self._clock(st) is None:
            return
        if self.selected and st is not None and self.selected.key == st.key:
            self._show_ladder(st)
        self._show_queue()

    # -- core events -------------------------------------------------------------------------------------------
    def _ladder_event(self, ev: LadderStarted | RungStarted | RungProgress | RungFinished | FirstVerdict) -> None:
        """The run under way moved on: the tree's badge, the ladder table and the queue panel follow."""
        st = self.state(ev.key)
        if isinstance(ev, RungStarted):
            self._clocks[ev.key] = (ev.rung, ev.at)
        if not st.apply(ev):
            return
        self.query_one(KernelTree).update_version(self._ref(ev.key), st)
        if self.selected and self.selected.key == ev.key:
            self._show_ladder(st)
            if isinstance(ev, (LadderStarted, RungFinished)):  # Details says it runs, and what finished so far
                self.query_one("#details", Static).update(details_text(self.selected, st))
            if isinstance(ev, LadderStarted):  # its header says a new run is under way: shown, not scrolled past
                self.query_one("#details-scroll", VerticalScroll).scroll_home(animate=False)
            if isinstance(ev, RungFinished) and ev.result.name == "correctness":  # Accuracy fills when it ends
                self.query_one(AccuracyTable).show_rung(ev.result)
                self._show_accuracy_notes(st, ev.result)
            elif isinstance(ev, LadderStarted):  # the table still shows the last finished run's: said above it
                self._show_accuracy_notes(st)
        self._show_queue()

    def _ladder_finished(self, ev: LadderFinished) -> None:
        st, k = self.state(ev.key), self._ref(ev.key)
        previous = st.result
        if not st.apply(ev):  # the end of a run other than the one under way (a cancelled one's, late)
            return
        self._clocks.pop(ev.key, None)
        if is_cancelled(ev.result):  # no verdict: the version keeps the one it had (a notice says why)
            st.result = previous
        st.refresh_stale(self.ws)
        self.query_one(KernelTree).update_version(k, st)
        if self.selected and self.selected.key == k.key:
            self._show_selected()
        elif self.selected and self.selected.problem == k.problem:
            self._show_timings()

    def _queue(self, ev: QueueChanged) -> None:
        tree = self.query_one(KernelTree)
        changed = False
        for key, st in self.states.items():
            queued = key in ev.waiting
            if st.queued != queued:
                st.queued = queued
                tree.update_version(self._ref(key), st)
                changed = True
        if changed:  # the Timings tab's verdict column is the tree's badge (new-user trial 35, F11: "✗ correctness"
            self._show_timings()  # there after X withdrew the queue, "(stale)" in the tree)
        if (ev.running is None) != (self._queue_state[0] is None):
            self.refresh_bindings()  # the cancel key shows in the footer only while a ladder runs
        self._queue_state = (ev.running, ev.rung, ev.waiting)
        self._show_queue()

    def _worker_state(self, ev: WorkerState) -> None:
        self.worker_states[ev.role] = ev.state
        if ev.state == "restarting" and ev.detail != CANCELLED:  # a cancel's own notice names the workers restarted
            self.notify(f"{ev.role} worker restarted: {ev.detail}", severity="warning", timeout=6)
        elif ev.state == "failed":
            self.notify(f"the {ev.role} worker could not start: {ev.detail}", severity="error", timeout=10)
        self._show_queue()

    def _file_changed(self, ev: FileChanged) -> None:
        tree = self.query_one(KernelTree)
        for k in self.ws.all_versions():
            self.state(k.key)
        tree.rebuild(self.states)
        for key, st in self.states.items():
            if st.refresh_stale(self.ws):
                tree.update_version(self._ref(key), st)
        if self.selected and not self.selected.path.exists():
            keys = tree.version_keys()
            self.select(self._ref(keys[0]) if keys else None)
        else:
            self._show_timings()

    def _result_stored(self, ev: ResultStored) -> None:
        k = KernelRef(ev.problem, ev.version, self.ws.root)
        st = self.state(k.key)
        stored = self.store.load(ev.problem, ev.version)
        if stored is None or st.running or (st.result and st.result.started_at >= stored.started_at):
            return
        st.result = stored
        st.refresh_stale(self.ws)
        self.query_one(KernelTree).update_version(k, st)
        if self.selected and self.selected.key == k.key:
            self._show_selected()
        elif self.selected and self.selected.problem == k.problem:
            self._show_timings()

    def _notice(self, ev: Notice) -> None:
        severity: dict[str, SeverityLevel] = {"error": "error", "warning": "warning"}
        self.notify(ev.message, severity=severity.get(ev.level, "information"))

    async def _agent_event(self, ev: Event) -> None:
        if isinstance(ev, ApprovalRequest) and self.chat_collapsed:
            self._show_chat(collapsed=False)  # a write waits for y or n: the chat opens to ask
        await self.query_one(ChatPane).handle(ev)
        if self.chat_collapsed:
            self._show_chat()  # the bar follows the agent's state

    # -- chat ----------------------------------------------------------------------------------------------------
    async def _show_resumed(self, plan: ResumePlan) -> None:
        """The resumed session's earlier chat in the chat pane (as the replay shows it: no approval is asked
        again), then its report: how its last run ended, the log's problems, the sources missing or changed (also
        a notification, which stays until read)."""
        chat = self.query_one(ChatPane)
        await chat.add_line(f"── session {plan.id}, as recorded ──", "dim")
        for ev in chat_entries(plan):
            if isinstance(ev, ApprovalRequest):
                await chat.add_line(f"approve {'new file' if ev.new_file else 'edit'} {ev.path}?", "dim")
            elif isinstance(ev, ApprovalDecided):
                await chat.add_line("applied" if ev.approved else "refused", "green" if ev.approved else "red")
            else:
                await chat.handle(ev)
        lines = plan.lines()
        warn = {*plan.warnings, *(v.line() for v in plan.versions)}
        for line in lines:
            await chat.add_line(line, "yellow" if line in warn else "dim")
        await chat.add_line("── resumed: new messages continue this conversation ──", "dim")
        if plan.versions or plan.warnings:
            self.notify("\n".join(lines[2:]), title=f"resumed {plan.id}", severity="warning", timeout=30)

    def _chat_problem(self) -> str:
        """The problem the chat's next message is about: the selected one, else the first."""
        return self.selected.problem if self.selected else (self.ws.problems() or [""])[0]

    def action_focus_chat(self) -> None:
        """Type to the agent (c; a collapsed chat opens); the tree takes the keys again after a click or Tab."""
        if self.chat_collapsed:
            self._show_chat(collapsed=False)
        self.query_one("#chat-input", Input).focus()

    def action_toggle_chat(self) -> None:
        """Collapse the chat pane to its one-line bar, or open it with its input focused (ctrl+g): what is typed
        next goes to the agent, not to the app's keys (new-user trial 32, F5: a question typed after ctrl+g queued
        every version with its ``a``)."""
        self._show_chat(collapsed=not self.chat_collapsed)
        if not self.chat_collapsed:
            self.query_one("#chat-input", Input).focus()

    def _show_chat(self, collapsed: bool | None = None) -> None:
        """Show the chat pane, or in its place the one-line bar (its state, and the key that opens it); with
        ``collapsed`` None, as it is. Focus inside a chat that collapses goes back to the tree."""
        if collapsed is not None:
            self.chat_collapsed = collapsed
        chat, bar = self.query_one(ChatPane), self.query_one("#chat-bar", Static)
        if self.chat_collapsed and self.focused is not None and chat in self.focused.ancestors:
            self.query_one(KernelTree).focus()
        chat.display, bar.display = not self.chat_collapsed, self.chat_collapsed
        if self.chat_collapsed:
            key = next(k for k, action, *_ in KEYS if action == "toggle_chat")
            bar.update(
                Text.assemble(
                    ("▸ ", "bold"),
                    (str(chat.border_title or "chat"), "bold"),
                    f" · {chat.border_subtitle or chat.status()}",
                    (f"  ({key} opens it)", "dim"),
                )
            )

    def on_resize(self, event: events.Resize) -> None:
        """Below 100 columns the footer packs its keys closer (Textual's compact footer)."""
        self.query_one(Footer).compact = event.size.width < 100

    def on_click(self, event: events.Click) -> None:
        """A click on the collapsed chat's bar opens the chat."""
        if event.widget is not None and event.widget.id == "chat-bar":
            self._show_chat(collapsed=False)

    def action_toggle_maximize(self) -> None:
        """The focused panel fills the screen, or back (m; esc too): the chat when the focus is in it, the ladder
        when it has the focus, else the result tabs (their table takes the keys). Textual's own maximize
        (``Screen.maximized``)."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        focused, chat, ladder = self.focused, self.query_one(ChatPane), self.query_one(LadderTable)
        target: Widget = self.query_one(TabbedContent)
        if focused is not None and chat in focused.ancestors_with_self:
            target = chat
        elif focused is ladder:
            target = ladder
        self._focus_before_max = focused
        screen.maximized = target
        if isinstance(target, TabbedContent) and target.active_pane is not None:
            inner = next((w for w in target.active_pane.walk_children(Widget) if w.focusable), None)
            if inner is not None:
                inner.focus()

    def _maximized_changed(self, maximized: Widget | None) -> None:
        """Back from a maximized panel (m or esc): the focus returns where it was."""
        if maximized is not None:
            return
        before, self._focus_before_max = self._focus_before_max, None
        if before is not None and before.is_attached and before.focusable:
            before.focus()

    def action_stop_agent(self) -> None:
        """Stop the agent's reply and its loop (Esc); when it is idle, leave the chat line for the tree."""
        if not self.query_one(ChatPane).stop() and isinstance(self.focused, Input):
            self.query_one(KernelTree).focus()

    def action_toggle_auto(self) -> None:
        """Switch between asking before each write and applying writes at once (ctrl+t)."""
        self.query_one(ChatPane).toggle_auto()

    def action_cycle_rounds(self) -> None:
        """Cycle the automatic ladder-result rounds: 0, 1, 3, 5, 10 (ctrl+r)."""
        self.query_one(ChatPane).cycle_rounds()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str | KernelRef]) -> None:
        if isinstance(event.node.data, KernelRef):
            self.select(event.node.data)

    # -- actions -----------------------------------------------------------------------------------------------
    def action_open_citation(self, cited: str) -> None:
        """Open a ``path:line`` citation of the chat in the Context tab (``ContextPanel.open_cited``)."""
        self.query_one(TabbedContent).active = "tab-context"
        if not self.query_one(ContextPanel).open_cited(cited):
            self.notify(f"{cited}: no such file in the workspace or the context", severity="warning")

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-context":  # the index is brought up to date the first time the tab is shown
            panel = self.query_one(ContextPanel)
            panel.ensure_index()
            # what is typed next is a query, not the app's keys (n made a new version, m maximized: seen in tmux)
            panel.query_one("#context-query", Input).focus()

    def action_show_tab(self, tab: str) -> None:
        """Show a tab: Accuracy (1), Timings (2), SASS (3), Diff (4), Profile (5), Details (6), IR (7), Context (8)."""
        self.query_one(TabbedContent).active = tab

    def _runnable(self) -> tuple[Session, KernelRef] | None:
        """The session and the selected version when a run can be queued (a version is selected and the session
        runs), else None."""
        if self.selected and self.session and self.start_session:
            return self.session, self.selected
        return None

    def action_rerun(self) -> None:
        """Run the selected version's ladder again."""
        if run := self._runnable():
            session, k = run
            session.submit(k, why="request")

    def action_cancel_run(self) -> None:
        """Cancel the ladder under way (x): its worker calls end now, the workers it used restart, and the version
        keeps the verdict it had (the run is a notice, not a failure of the kernel)."""
        if self.session and self.start_session and self.session.cancel() is not None:
            return
        self.notify("no ladder is running", timeout=3)

    def action_cancel_all(self) -> None:
        """Withdraw every queued run and cancel the one under way (X; new-user trial 25 F8: after ``a`` or a
        reference edit only ``x`` ten times emptied the queue)."""
        if not (self.session and self.start_session):
            return
        withdrawn = self.session.withdraw_queued("withdrawn: every queued run cleared (X)")  # (each says so)
        if self.session.cancel() is None and not withdrawn:
            self.notify("nothing runs or waits", timeout=3)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The cancel key is in the footer only while a ladder runs."""
        if action == "cancel_run":
            return self._queue_state[0] is not None
        return True

    def action_profile(self) -> None:
        """Profile the selected version with Nsight Compute (one call after warm-up; needs a GPU)."""
        if (run := self._runnable()) and self._on_a_gpu("a profile: Nsight Compute"):
            session, k = run
            session.submit(k, ("profile",), why="request")

    def action_trace(self) -> None:
        """Trace the selected version's ktui.trace regions (one traced call apart from the benchmark; needs a GPU)."""
        if (run := self._runnable()) and self._on_a_gpu("a trace: the GPU's clocks"):
            session, k = run
            session.submit(k, ("trace",), why="request")

    def _on_a_gpu(self, what: str) -> bool:
        """Whether the session's workers have a GPU; else a notice says at once that ``what`` needs one (a new user's
        ``p`` on the CPU recompiled and marked four rungs stale for 10 s before saying so: trial 19)."""
        if self.session is not None and self.session.device == "cpu":
            self.notify(f"{what} needs a CUDA GPU: this session runs on the CPU (the interpreter)", severity="warning")
            return False
        return True

    def action_toggle_side_by_side(self) -> None:
        """Show the SASS diff unified or side by side (s)."""
        view = self.query_one(DiffView)
        view.side_by_side = not view.side_by_side
        view.show(self.ws, self.selected, self._results())

    def action_pin_baseline(self) -> None:
        """Pin the selected version as its problem's baseline (Diff and Profile compare with it)."""
        if self.selected is None:
            return
        from ktui.core.ladder import Baselines

        Baselines(self.ws).pin(self.selected.problem, self.selected.version)
        self.query_one(KernelTree).pin_baseline(self.selected.problem, self.selected.version)
        self.notify(f"baseline of {self.selected.problem}: {self.selected.version}")
        self._show_selected()

    def action_open_editor(self) -> None:
        """Open the selected version in ``$EDITOR`` (else ``$VISUAL``), the terminal handed over to it (e); the
        watcher reruns what it saves."""
        if self.selected is None:
            self.notify("select a version first", timeout=3)
            return
        open_in_editor(self, self.selected.path, os.environ)

    def action_run_stale(self) -> None:
        """Run every version whose result is stale (its kernel or its reference changed since it ran) or unverified
        (only compiled since its last verdict, by ``ktui diff``) (u; at start-up too unless ktui.toml says
        ``[tui] stale = "mark"``)."""
        keys = stale_keys(self.states)
        if keys and self.session and self.start_session:
            for key in keys:
                self.session.submit(self._ref(key))
            what = " or ".join(w for w in ("stale", "unverified") if any(getattr(self.states[k], w) for k in keys))
            self.notify(f"{len(keys)} {what} version{'s' if len(keys) != 1 else ''} queued: {', '.join(keys)}")

    def action_run_problem(self) -> None:
        """Run every version of the selected problem."""
        if run := self._runnable():
            session, k = run
            session.submit_problem(k.problem)

    def _step(self, delta: int) -> None:
        tree = self.query_one(KernelTree)
        key = tree.step(self.selected.key if self.selected else None, delta)
        if key is None:
            self.notify(f"{'last' if delta > 0 else 'first'} version: nothing {'after' if delta > 0 else 'before'} it")
            return
        tree.select_key(key)
        self.select(self._ref(key))

    def action_next_version(self) -> None:
        """Select the next version in the tree."""
        self._step(1)

    def action_previous_version(self) -> None:
        """Select the previous version in the tree."""
        self._step(-1)

    def action_toggle_help(self) -> None:
        """Show the keys panel (``keys.KeysPanel``: ktui's keys first, with what each does, then the tree's), or
        hide it when shown."""
        shown = self.screen.query(KeysPanel)
        if shown:
            shown.remove()
        else:
            self.screen.mount(KeysPanel())

    def action_new_version(self) -> None:
        """Copy the selected version to the next free vN.py (the watcher then runs it)."""
        source = self.selected
        if source is None:
            return
        try:
            new = self.ws.new_version(source)
        except OSError as exc:
            self.notify(f"could not copy {source.key}: {exc}", severity="error")
            return
        self.state(new.key)
        tree = self.query_one(KernelTree)
        tree.rebuild(self.states)
        tree.select_key(new.key)
        self.select(new)
        self.notify(f"{new.key} created from {source.key}")

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from palette_commands(self)
        yield SystemCommand(
            "Run stale versions",
            "Run every version whose kernel or reference changed, or only compiled since its verdict (u)",
            self.action_run_stale,
        )
