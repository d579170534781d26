"""The ktui app: kernel tree, rung ladder, accuracy and timings tables, and the place of the chat pane.

The app never imports torch: the ``Session`` it drives runs every kernel in worker processes and publishes what
happens on its event bus; the app turns those events into messages and updates its panels in place.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path
from typing import Iterable

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Log, Static, TabbedContent, TabPane, Tree

from ktui.agent.config import SETUP_HINT, AgentConfig
from ktui.core.events import Event, LadderFinished, LadderStarted, RungFinished, RungStarted
from ktui.core.results import device_label
from ktui.core.session import Session
from ktui.core.store import ResultStore
from ktui.tui.chat import AGENT_EVENTS, AgentUpdate, ApprovalBar, ChatPane
from ktui.tui.messages import (FileUpdate, LadderUpdate, NoticeUpdate, QueueUpdate, StoredUpdate, WorkerUpdate,
                               message_for)
from ktui.tui.state import VersionState
from ktui.tui.widgets import (AccuracyTable, KernelTree, LadderTable, ProfileTable, QueuePanel, SourceSass,
                              TimingsTable, details_text)
from ktui.core.workspace import KernelRef, Workspace

ROUNDS = (0, 1, 3, 5, 10)


class KtuiApp(App):
    """``ktui [WORKSPACE]``: saving a kernel reruns its ladder; the panels show every version's verdict.

    Args:
        workspace: the workspace to show.
        device: ``auto``, ``cpu`` or ``cuda`` (ignored when ``session`` is given).
        session: a ready-made session (tests); by default one is created and started on mount.
        start_session: False shows stored results only, with no workers and no watcher (snapshot tests).
        agent_config: the chat's model and loop settings (``ktui.agent.config.load_config``); None: no model.
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "ktui"
    BINDINGS = [
        Binding("r", "rerun", "Rerun"),
        Binding("a", "run_problem", "Run all"),
        Binding("right_square_bracket", "next_version", "Next"),
        Binding("left_square_bracket", "previous_version", "Prev"),
        Binding("n", "new_version", "New version"),
        Binding("c", "focus_chat", "Chat"),
        Binding("p", "profile", "Profile", show=False),
        Binding("b", "pin_baseline", "Baseline", show=False),
        Binding("s", "toggle_side_by_side", "Side by side", show=False),
        Binding("q", "quit", "Quit"),
        Binding("escape", "stop_agent", "Stop agent"),
        Binding("ctrl+t", "toggle_auto", "Auto-apply", show=False),
        Binding("ctrl+r", "cycle_rounds", "Rounds", show=False),
        Binding("1", "show_tab('tab-accuracy')", "Accuracy", show=False),
        Binding("2", "show_tab('tab-timings')", "Timings", show=False),
        Binding("3", "show_tab('tab-sass')", "SASS", show=False),
        Binding("4", "show_tab('tab-diff')", "Diff", show=False),
        Binding("5", "show_tab('tab-profile')", "Profile tab", show=False),
        Binding("6", "show_tab('tab-details')", "Details", show=False),
    ]

    def __init__(self, workspace: Workspace, device: str = "auto", session: Session | None = None,
                 start_session: bool = True, agent_config: AgentConfig | None = None):
        super().__init__()
        self.agent_config = agent_config or AgentConfig()
        self.agent = None
        self._outbox: deque[str] = deque()  # messages typed while the agent works: none is lost
        self._agent_busy = False
        self.ws = workspace
        self._device_choice = device
        self.session = session
        self.start_session = start_session
        self.store = session.store if session else ResultStore(workspace)
        self.states: dict[str, VersionState] = {}
        self.selected: KernelRef | None = None
        self.worker_states: dict[str, str] = {}
        self._queue_state: tuple[str | None, str | None, tuple[str, ...]] = (None, None, ())
        self._unsubscribe = None
        self._owns_session = False  # a session passed in (tests) is stopped by whoever made it
        self._side_by_side = False  # the Diff tab: unified or two columns

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
                    with TabPane("Timings", id="tab-timings"):
                        yield TimingsTable(id="timings")
                    with TabPane("SASS", id="tab-sass"):
                        yield SourceSass(id="sass")
                    with TabPane("Diff", id="tab-diff"):
                        yield Log(id="diff", highlight=False)
                    with TabPane("Profile", id="tab-profile"):
                        yield ProfileTable(id="profile")
                    with TabPane("Details", id="tab-details"):
                        with VerticalScroll():
                            yield Static(id="details")
                yield ChatPane(id="chat")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.ws.root.name
        self.query_one("#tree").border_title = "kernels"
        self.query_one("#queue").border_title = "queue"
        self.query_one("#ladder").border_title = "rung ladder"
        chat = self.query_one(ChatPane)
        chat.border_title = "chat"
        chat.border_subtitle = self._agent_status()
        for k in self.ws.all_versions():
            st = self.states[k.key] = VersionState(k.key)
            st.result = self.store.load(k.problem, k.version)
        tree = self.query_one(KernelTree)
        tree.rebuild(self.states)
        keys = tree.version_keys()
        if keys:
            self.select(self._ref(keys[0]))
            tree.select_key(keys[0])
        self._show_queue()
        if not self.agent_config.configured:
            self.call_after_refresh(lambda: self.run_worker(chat.add_line(SETUP_HINT, "yellow")))
        if self.start_session:
            # Workers import torch for seconds on every core: spawn them once the first screen is drawn.
            self.call_after_refresh(self._start_session)

    def _start_session(self) -> None:
        if self.session is None:
            self.session = Session(self.ws, self._device_choice)
            self.store = self.session.store
            self._owns_session = True
        self._unsubscribe = self.session.bus.subscribe(self._on_core_event)
        self.sub_title = f"{self.ws.root.name} · device: {device_label({'type': self.session.device})}"
        self.session.start()
        if self.agent_config.configured:
            from ktui.agent.agent import Agent
            from ktui.agent.llm import preload

            self.agent = Agent(self.ws, self.agent_config, self.session.bus, run_ladder=self.session.result_for,
                               results=self.session.results)
            threading.Thread(target=preload, name="ktui-litellm-import", daemon=True).start()

    def on_unmount(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()
        if self.session and self._owns_session:
            self.session.stop()

    def _on_core_event(self, event: Event) -> None:
        msg = AgentUpdate(event) if isinstance(event, AGENT_EVENTS) else message_for(event)
        if msg is not None:
            self.post_message(msg)

    # -- helpers -----------------------------------------------------------------------------------------------
    def _ref(self, key: str) -> KernelRef:
        problem, version = key.split("/", 1)
        return KernelRef(problem, version, self.ws.root)

    def state(self, key: str) -> VersionState:
        if key not in self.states:
            self.states[key] = VersionState(key)
        return self.states[key]

    def select(self, k: KernelRef | None) -> None:
        self.selected = k
        self._show_selected()

    def _show_selected(self) -> None:
        k = self.selected
        st = self.states.get(k.key) if k else None
        self.query_one(LadderTable).show(st)
        self.query_one(AccuracyTable).show(st.result if st else None)
        self._show_timings()
        self._show_inside(k, st)
        self.query_one("#details", Static).update(details_text(k, st))
        self.query_one("#ladder").border_subtitle = k.key if k else ""

    def _show_inside(self, k: KernelRef | None, st: VersionState | None) -> None:
        """The SASS, Diff and Profile tabs of the selected version."""
        result = st.result if st else None
        self.query_one(SourceSass).show(self.ws.root, result)
        self.query_one(ProfileTable).show(result)
        self._show_diff(k)

    def _compare_with(self, k: KernelRef) -> KernelRef | None:
        """The pinned baseline of the problem, else the version before ``k``."""
        from ktui.core.ladder import Baselines

        versions = [v.version for v in self.ws.versions(k.problem)]
        base = Baselines(self.ws).get(k.problem)
        if base and base != k.version and base in versions:
            return KernelRef(k.problem, base, self.ws.root)
        i = versions.index(k.version) if k.version in versions else 0
        return KernelRef(k.problem, versions[i - 1], self.ws.root) if i > 0 else None

    def _show_diff(self, k: KernelRef | None) -> None:
        log = self.query_one("#diff", Log)
        log.clear()
        other = self._compare_with(k) if k else None
        ra = self.states.get(other.key).result if other and other.key in self.states else None
        rb = self.states.get(k.key).result if k and k.key in self.states else None
        if other is None or ra is None or rb is None:
            log.write_line("Nothing to compare yet: the diff shows this version against the pinned baseline (b) or "
                           "the version before it, once both have been through the ladder.")
            return
        self.run_worker(lambda: self._diff_lines(other, k, ra, rb), thread=True, group="diff", exclusive=True,
                        exit_on_error=False)

    def _diff_lines(self, a: KernelRef, b: KernelRef, ra, rb) -> None:
        from ktui.core.inspect.diff import DiffError, compare_results, render

        try:
            text = render(compare_results([(self.ws, a, ra), (self.ws, b, rb)]), side_by_side=self._side_by_side)
        except (DiffError, OSError) as exc:
            text = str(exc)
        self.call_from_thread(self._write_diff, b.key, text)

    def _write_diff(self, key: str, text: str) -> None:
        if self.selected is None or self.selected.key != key:
            return  # the selection moved on while the diff was computed
        log = self.query_one("#diff", Log)
        log.clear()
        log.write_lines(text.splitlines())
        log.scroll_home(animate=False)

    def _show_timings(self) -> None:
        k = self.selected
        if k is None:
            return
        rows = [(v, self.state(v.key)) for v in self.ws.versions(k.problem)]
        self.query_one(TimingsTable).show(k.problem, rows)

    def _show_queue(self) -> None:
        running, rung, waiting = self._queue_state
        self.query_one(QueuePanel).render_state(running, rung, waiting, self.worker_states)

    # -- core events -------------------------------------------------------------------------------------------
    def on_ladder_update(self, message: LadderUpdate) -> None:
        ev = message.event
        st = self.state(ev.key)
        if isinstance(ev, LadderStarted):
            st.start(ev.rungs)
        elif isinstance(ev, RungStarted):
            st.running_rung = ev.rung
        elif isinstance(ev, RungFinished):
            st.live[ev.result.name] = ev.result
        elif isinstance(ev, LadderFinished):
            st.finish(ev.result)
        k = self._ref(ev.key)
        self.query_one(KernelTree).update_version(k, st)
        if self.selected and self.selected.key == ev.key:
            self.query_one(LadderTable).show(st)
            if isinstance(ev, LadderFinished):
                self.query_one(AccuracyTable).show(st.result)
                self._show_inside(k, st)
                self.query_one("#details", Static).update(details_text(k, st))
        if isinstance(ev, LadderFinished) and self.selected and self.selected.problem == k.problem:
            self._show_timings()

    def on_queue_update(self, message: QueueUpdate) -> None:
        ev = message.event
        tree = self.query_one(KernelTree)
        for key, st in self.states.items():
            queued = key in ev.waiting
            if st.queued != queued:
                st.queued = queued
                tree.update_version(self._ref(key), st)
        self._queue_state = (ev.running, ev.rung, ev.waiting)
        self._show_queue()

    def on_worker_update(self, message: WorkerUpdate) -> None:
        ev = message.event
        self.worker_states[ev.role] = ev.state
        if ev.state == "restarting":
            self.notify(f"{ev.role} worker restarted: {ev.detail}", severity="warning", timeout=6)
        self._show_queue()

    def on_file_update(self, message: FileUpdate) -> None:
        tree = self.query_one(KernelTree)
        for k in self.ws.all_versions():
            self.state(k.key)
        tree.rebuild(self.states)
        if self.selected and not self.selected.path.exists():
            keys = tree.version_keys()
            self.select(self._ref(keys[0]) if keys else None)
        else:
            self._show_timings()

    def on_stored_update(self, message: StoredUpdate) -> None:
        ev = message.event
        k = KernelRef(ev.problem, ev.version, self.ws.root)
        st = self.state(k.key)
        stored = self.store.load(ev.problem, ev.version)
        if stored is None or st.running or (st.result and st.result.started_at >= stored.started_at):
            return
        st.result = stored
        self.query_one(KernelTree).update_version(k, st)
        if self.selected and self.selected.key == k.key:
            self._show_selected()
        elif self.selected and self.selected.problem == k.problem:
            self._show_timings()

    def on_notice_update(self, message: NoticeUpdate) -> None:
        sev = {"error": "error", "warning": "warning"}.get(message.event.level, "information")
        self.notify(message.event.message, severity=sev)

    # -- chat ----------------------------------------------------------------------------------------------------
    def _agent_status(self) -> str:
        c = self.agent_config
        if not c.configured:
            return "no model"
        return f"{c.model} · {c.approve} · rounds {c.max_rounds}"

    async def on_agent_update(self, message: AgentUpdate) -> None:
        await self.query_one(ChatPane).handle(message.event)

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "chat-input":
            return
        text = event.value.strip()
        event.input.value = ""
        if not text:
            return
        chat = self.query_one(ChatPane)
        if self.agent is None:
            await chat.add_user(text)
            await chat.add_line(SETUP_HINT if not self.agent_config.configured else
                                "the workers are starting; send it again in a moment", "yellow")
            return
        if self._agent_busy:
            self._outbox.append(text)
            await chat.add_line(f"(queued: {text[:60]})", "dim")
            return
        self._send(text)

    def _send(self, text: str) -> None:
        problem = self.selected.problem if self.selected else (self.ws.problems() or [""])[0]
        self._agent_busy = True
        self.run_worker(lambda: self._agent_exchange(text, problem), thread=True, group="agent",
                        description=f"agent: {text[:40]}", exit_on_error=False)

    def _agent_exchange(self, text: str, problem: str) -> None:
        try:
            self.agent.send(text, problem)
        finally:
            self.call_from_thread(self._agent_done)

    def _agent_done(self) -> None:
        self._agent_busy = False
        if self._outbox:
            self._send(self._outbox.popleft())

    def on_approval_bar_decided(self, message: ApprovalBar.Decided) -> None:
        if self.agent is not None:
            self.agent.decide(message.request_id, message.approved)

    def action_focus_chat(self) -> None:
        """Type to the agent (c); the tree takes the keys again after a click or Tab."""
        self.query_one("#chat-input", Input).focus()

    def action_stop_agent(self) -> None:
        """Stop the agent's reply and its loop (Esc); when it is idle, leave the chat line for the tree."""
        if self.agent is not None and self._agent_busy:
            self.agent.stop()
            self._outbox.clear()
        elif isinstance(self.focused, Input):
            self.query_one(KernelTree).focus()

    def action_toggle_auto(self) -> None:
        """Switch between asking before each write and applying writes at once."""
        self.agent_config.approve = "auto" if self.agent_config.approve == "ask" else "ask"
        self.query_one(ChatPane).border_subtitle = self._agent_status()

    def action_cycle_rounds(self) -> None:
        """Cycle the automatic ladder-result rounds: 0, 1, 3, 5, 10."""
        c = self.agent_config
        c.max_rounds = ROUNDS[(ROUNDS.index(c.max_rounds) + 1) % len(ROUNDS)] if c.max_rounds in ROUNDS else 3
        self.query_one(ChatPane).border_subtitle = self._agent_status()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        if isinstance(event.node.data, KernelRef):
            self.select(event.node.data)

    # -- actions -----------------------------------------------------------------------------------------------
    def action_show_tab(self, tab: str) -> None:
        """Show the Accuracy (1), Timings (2) or Details (3) tab."""
        self.query_one(TabbedContent).active = tab

    def action_rerun(self) -> None:
        """Run the selected version's ladder again."""
        if self.selected and self.session and self.start_session:
            self.session.submit(self.selected)

    def action_profile(self) -> None:
        """Profile the selected version with Nsight Compute (one call after warm-up; needs a GPU)."""
        if self.selected and self.session and self.start_session:
            self.session.submit(self.selected, ("profile",))

    def action_toggle_side_by_side(self) -> None:
        """Show the SASS diff unified or side by side (s)."""
        self._side_by_side = not self._side_by_side
        self._show_diff(self.selected)

    def action_pin_baseline(self) -> None:
        """Pin the selected version as its problem's baseline (Diff and Profile compare with it)."""
        if self.selected is None:
            return
        from ktui.core.ladder import Baselines

        Baselines(self.ws).pin(self.selected.problem, self.selected.version)
        self.notify(f"baseline of {self.selected.problem}: {self.selected.version}")
        self._show_selected()

    def action_run_problem(self) -> None:
        """Run every version of the selected problem."""
        if self.selected and self.session and self.start_session:
            self.session.submit_problem(self.selected.problem)

    def _step(self, delta: int) -> None:
        tree = self.query_one(KernelTree)
        keys = tree.version_keys()
        if not keys:
            return
        i = keys.index(self.selected.key) if self.selected and self.selected.key in keys else -delta
        key = keys[(i + delta) % len(keys)]
        tree.select_key(key)
        self.select(self._ref(key))

    def action_next_version(self) -> None:
        """Select the next version in the tree."""
        self._step(1)

    def action_previous_version(self) -> None:
        """Select the previous version in the tree."""
        self._step(-1)

    def action_new_version(self) -> None:
        """Copy the selected version to the next free vN.py (the watcher then runs it)."""
        if self.selected is None:
            return
        try:
            new = self.ws.new_version(self.selected)
        except OSError as exc:
            self.notify(f"could not copy {self.selected.key}: {exc}", severity="error")
            return
        self.state(new.key)
        tree = self.query_one(KernelTree)
        tree.rebuild(self.states)
        tree.select_key(new.key)
        self.select(new)
        self.notify(f"{new.key} created from {Path(self.selected.path).name}")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Rerun", "Run the selected version's ladder again (r)", self.action_rerun)
        yield SystemCommand("Run all versions", "Run every version of the selected problem (a)",
                            self.action_run_problem)
        yield SystemCommand("Next version", "Select the next version (])", self.action_next_version)
        yield SystemCommand("Previous version", "Select the previous version ([)", self.action_previous_version)
        yield SystemCommand("New version", "Copy the selected version to the next free vN.py (n)",
                            self.action_new_version)
        yield SystemCommand("Profile", "Profile the selected version with Nsight Compute (p, GPU only)",
                            self.action_profile)
        yield SystemCommand("Pin baseline", "Diff and Profile compare with the selected version (b)",
                            self.action_pin_baseline)
        yield SystemCommand("Diff: side by side", "Toggle the SASS diff between unified and two columns (s)",
                            self.action_toggle_side_by_side)
        yield SystemCommand("Agent: stop", "Stop the agent's reply and its loop (esc)", self.action_stop_agent)
        yield SystemCommand("Agent: toggle auto-apply", "Ask before each write, or apply writes at once (ctrl+t)",
                            self.action_toggle_auto)
        yield SystemCommand("Agent: cycle rounds", "Automatic ladder-result rounds 0/1/3/5/10 (ctrl+r)",
                            self.action_cycle_rounds)
