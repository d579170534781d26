"""The chat pane: the conversation with the model, streamed as it is written, with the approval prompt for writes;
and the controller of the exchange (it owns the agent, as Toad's ``Conversation`` owns its agent).

``ChatPane.send`` runs ``Agent.send`` on a thread worker; messages typed while the agent works wait in the outbox and
go one after another, so that nothing typed is lost. The agent's events come back through the app's bus bridge to
``ChatPane.handle``.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from ktui.agent.config import SETUP_HINT, AgentConfig
from ktui.agent.events import (
    AGENT_EVENTS,
    AgentNotice,
    AgentState,
    ApprovalDecided,
    ApprovalRequest,
    ChatDelta,
    ChatMessage,
    ChatReplyDone,
    ChatReplyReset,
    ToolCall,
)
from ktui.core.events import Event
from ktui.core.workspace import KernelRef

if TYPE_CHECKING:
    from ktui.agent.agent import Agent
    from ktui.core.session import Session
    from ktui.core.workspace import Workspace

__all__ = ["AGENT_EVENTS", "ROUNDS", "ApprovalBar", "ChatPane", "approval_header", "selected_of"]

ROUNDS = (0, 1, 3, 5, 10)  # ctrl+r cycles the automatic ladder-result rounds through these


CITATION = re.compile(
    r"(?<![\w/.-])((?:[A-Za-z_][\w-]*:)?[\w./-]*[\w-]\.(?:py|pyi|hpp|h|cuh|cu|cpp|cc|md|rst|html?|ptx|sass|ttgir|txt))"
    r":(\d+)(#[\w.-]+)?"
)
"""A ``path:line`` citation (``cutlass:cute/atom.py:1039``, ``context/ptx/ptx-isa.html:120#...-ld``), as the
system prompt asks the model to give them and ``ktui.context.index.Hit.cite`` writes them."""


def citations(text: str, most: int = 12) -> list[str]:
    """The distinct ``path:line`` citations in ``text``, in order of first appearance (at most ``most``)."""
    out: list[str] = []
    for m in CITATION.finditer(text):
        c = f"{m.group(1)}:{m.group(2)}{m.group(3) or ''}"
        if c not in out:
            out.append(c)
    return out[:most]


def approval_header(ev: ApprovalRequest) -> Text:
    """The line above a write's diff: the file, what the diff is against, and the lines it adds and removes, e.g.
    ``write kernels/softmax/v4.py (new, from kernels/softmax/v2.py)  +1 -1  ↑↓ PgUp PgDn scroll``."""
    if not ev.new_file:
        against = "changes the file"
    elif ev.base:
        against = f"new, from {ev.base}"
    else:
        against = "new file"
    return Text.assemble(
        ("write ", "bold"),
        (ev.path, "bold cyan"),
        (f" ({against})  ", ""),
        (f"+{ev.added}", "bold green"),
        (" ", ""),
        (f"-{ev.removed}", "bold red"),
        ("  ↑↓ PgUp PgDn scroll", "dim"),
    )


def selected_of(app: object) -> Callable[[str], KernelRef | None]:
    """The agent's ``base_of`` in the TUI: ``app``'s selected version when it is one of the problem asked about
    (what a new version derives from when the model read none). ``app`` is taken on the UI thread; the function
    runs on the agent's thread and only reads the attribute."""

    def of(problem: str) -> KernelRef | None:
        selected = getattr(app, "selected", None)
        return selected if isinstance(selected, KernelRef) and selected.problem == problem else None

    return of


class ApprovalBar(Static, can_focus=True):
    """Shown while a write waits: y applies it, n refuses it (one key each); the arrows, PgUp/PgDn and Home/End
    scroll the chat log (where the diff is) meanwhile."""

    BINDINGS = [
        Binding("y", "decide(True)", "Apply write"),
        Binding("n", "decide(False)", "Refuse write"),
        *[
            Binding(key, f"scroll_log('{how}')", show=False)
            for key, how in (
                ("up", "up"),
                ("down", "down"),
                ("pageup", "page_up"),
                ("pagedown", "page_down"),
                ("home", "home"),
                ("end", "end"),
            )
        ],
    ]

    class Decided(Message):
        """The human answered approval request ``request_id``."""

        def __init__(self, request_id: int, approved: bool) -> None:
            super().__init__()
            self.request_id = request_id
            self.approved = approved

    request_id: int | None = None

    def ask(self, ev: ApprovalRequest) -> None:
        self.request_id = ev.request_id
        self.update(
            Text.assemble(
                ("Apply this write to ", "bold"),
                (ev.path, "bold cyan"),
                ("?  ", "bold"),
                ("y", "bold green"),
                (" apply   ", ""),
                ("n", "bold red"),
                (" refuse", ""),
            )
        )
        self.display = True
        self.focus()

    def action_scroll_log(self, how: str) -> None:
        """Scroll the chat log: ``up``, ``down``, ``page_up``, ``page_down``, ``home`` or ``end``."""
        log = self.query_ancestor(ChatPane).log_view
        getattr(log, f"scroll_{how}")(animate=False)

    def action_decide(self, approved: bool) -> None:
        if self.request_id is not None:
            self.post_message(self.Decided(self.request_id, approved))
            self.request_id = None
            self.display = False


class ChatPane(Vertical):
    """The log of the conversation, the approval bar and the input line; it runs the agent's exchanges.

    Args:
        config: the model and loop settings (``approve`` and ``max_rounds`` change from the keys).
        problem: the problem the next message is about (the selected one).
    """

    def __init__(self, config: AgentConfig | None = None, problem: Callable[[], str] = lambda: "", **kw: Any):
        super().__init__(**kw)
        self.config = config or AgentConfig()
        self.problem = problem
        self.agent: Agent | None = None  # set by ``attach`` once the session runs
        self._outbox: deque[str] = deque()  # messages typed while the agent works
        self._busy = False
        self.missing_key = ""  # why the model cannot be called (``agent.llm.missing_key``), once known
        self._reply: Markdown | None = None
        self._stream: MarkdownStream | None = None
        self._reply_text = ""
        self._draw: dict[type[Event], Callable[[Any], Awaitable[None]]] = {
            ChatDelta: lambda ev: self.delta(ev.text),
            ChatReplyDone: self._reply_done,
            ChatReplyReset: self._reply_reset,
            ChatMessage: self._message,
            ToolCall: self._tool_call,
            ApprovalRequest: self._approval,
            ApprovalDecided: self._decided,
            AgentNotice: self._notice,
            AgentState: self._state,
        }

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="chat-log")
        yield ApprovalBar(id="approval")
        yield Input(placeholder="Message the agent (Enter sends, Esc stops it)", id="chat-input")

    def on_mount(self) -> None:
        self.query_one(ApprovalBar).display = False
        self.border_title = "chat"
        self.border_subtitle = self.status()
        if not self.config.configured:
            self.call_after_refresh(self.add_line, SETUP_HINT, "yellow")

    # -- the exchange --------------------------------------------------------------------------------------------
    def attach(self, agent: Agent) -> None:
        """Talk to ``agent`` from now on (the app makes it when the session has started)."""
        self.agent = agent

    def start_agent(self, ws: Workspace, session: Session) -> None:
        """Make the agent, when a model is configured, over ``session``'s bus and ladder; litellm (seconds to
        import) loads on a thread meanwhile."""
        if not self.config.configured:
            return
        from ktui.agent.agent import Agent
        from ktui.agent.llm import preload

        self.attach(
            Agent(
                ws,
                self.config,
                session.bus,
                run_ladder=session.result_for,
                results=session.results,
                run_many=session.results_for,
                base_of=selected_of(self.app),
            )
        )

        def load() -> None:  # and says at once when the model's API key is missing
            from ktui.agent.llm import missing_key

            preload()
            missing = missing_key(self.config)
            if missing:
                self.missing_key = missing  # messages are not sent: litellm's own error says it again, at length
                try:
                    self.app.call_from_thread(self._warn, missing)
                except RuntimeError:  # the app ended meanwhile: nobody to tell
                    pass

        threading.Thread(target=load, name="ktui-litellm-import", daemon=True).start()

    @property
    def busy(self) -> bool:
        """True while an exchange runs (messages typed meanwhile wait their turn)."""
        return self._busy

    def status(self) -> str:
        """The pane's subtitle: the model, the approval mode and the rounds."""
        c = self.config
        return f"{c.model} · {c.approve} · rounds {c.max_rounds}" if c.configured else "no model"

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "chat-input":
            return
        event.stop()
        text = event.value.strip()
        event.input.value = ""
        if not text:
            return
        if self.agent is None:
            await self.add_user(text)
            await self.add_line(
                SETUP_HINT if not self.config.configured else "the workers are starting; send it again in a moment",
                "yellow",
            )
            return
        if self.missing_key:  # (new-user trial 20 L4: ktui's line, then litellm's 5-line AuthenticationError)
            await self.add_user(text)
            await self.add_line(f"not sent: {self.missing_key}", "yellow")
            return
        if self._busy:
            self._outbox.append(text)
            await self.add_line(f"(queued: {text[:60]})", "dim")
            return
        self.send(text)

    def send(self, text: str) -> None:
        """Run one exchange about the selected problem on a thread worker. The worker runs on the app so that the
        app's one ``Worker.StateChanged`` handler reports it if it fails."""
        problem = self.problem()
        self._busy = True
        self.app.run_worker(
            lambda: self._exchange(text, problem),
            thread=True,
            group="agent",
            description=f"agent: {text[:40]}",
            exit_on_error=False,
        )

    def _exchange(self, text: str, problem: str) -> None:
        assert self.agent is not None  # (send() runs only once attached: the input holds messages till then)
        try:
            self.agent.send(text, problem)
        finally:
            self.app.call_from_thread(self._done)

    def _done(self) -> None:
        self._busy = False
        if self._outbox:
            self.send(self._outbox.popleft())

    def stop(self) -> bool:
        """Stop the reply under way and its loop, and drop the messages waiting; False when nothing runs."""
        if self.agent is None or not self._busy:
            return False
        self.agent.stop()
        self._outbox.clear()
        return True

    def toggle_auto(self) -> None:
        """Switch between asking before each write and applying writes at once."""
        self.config.approve = "auto" if self.config.approve == "ask" else "ask"
        self.border_subtitle = self.status()

    def cycle_rounds(self) -> None:
        """Cycle the automatic ladder-result rounds: 0, 1, 3, 5, 10."""
        c = self.config
        c.max_rounds = ROUNDS[(ROUNDS.index(c.max_rounds) + 1) % len(ROUNDS)] if c.max_rounds in ROUNDS else 3
        self.border_subtitle = self.status()

    def on_approval_bar_decided(self, message: ApprovalBar.Decided) -> None:
        message.stop()
        if self.agent is not None:
            self.agent.decide(message.request_id, message.approved)

    # -- drawing -------------------------------------------------------------------------------------------------
    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#chat-log", VerticalScroll)

    async def _mount(self, widget: Widget) -> None:
        await self.log_view.mount(widget)
        self.log_view.scroll_end(animate=False)

    def _warn(self, text: str) -> None:
        """A yellow line in the chat (from the app's thread: ``call_from_thread``)."""
        self.run_worker(self.add_line(text, "yellow"))

    async def add_line(self, text: str, style: str = "") -> None:
        await self._mount(Static(Text(text, style=style), classes="chat-line"))

    async def add_user(self, text: str) -> None:
        await self._mount(Static(Text.assemble(("you ", "bold cyan"), text), classes="chat-user"))

    async def delta(self, text: str) -> None:
        """Append a piece of the reply streaming now."""
        if self._reply is None:
            self._reply = Markdown("", classes="chat-reply")
            await self._mount(self._reply)
            self._stream = Markdown.get_stream(self._reply)
            self._reply_text = ""
        self._reply_text += text
        assert self._stream is not None  # (set together with _reply)
        await self._stream.write(text)
        self.log_view.scroll_end(animate=False)

    async def end_reply(self, usage: str) -> None:
        if self._stream is not None:
            await self._stream.stop()
        self._reply, self._stream = None, None
        cites = citations(self._reply_text)
        if cites:  # what the model says it took from the context: each opens in the Context tab
            links = "  ".join(f"[@click=app.open_citation({c!r})]{escape(c)}[/]" for c in cites)
            await self._mount(Static(f"[dim]cited:[/] {links}", classes="chat-cites"))
        await self.add_line(usage, "dim")

    async def reset_reply(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
        if self._reply is not None:
            await self._reply.remove()
        self._reply, self._stream = None, None
        await self.add_line("(the reply broke off; asking again)", "yellow")

    @property
    def reply_text(self) -> str:
        """The text of the reply streaming now (for tests and the status line)."""
        return self._reply_text

    async def handle(self, ev: Event) -> None:
        """Draw one agent event (others are ignored)."""
        draw = self._draw.get(type(ev))
        if draw is not None:
            await draw(ev)

    async def _reply_done(self, ev: ChatReplyDone) -> None:
        if self._reply is None and ev.text:
            await self.delta(ev.text)
        from ktui.core import report

        await self.end_reply(report.usage_line(ev))
        self.border_subtitle = report.session_usage(ev)

    async def _reply_reset(self, ev: ChatReplyReset) -> None:
        await self.reset_reply()

    async def _message(self, ev: ChatMessage) -> None:
        if ev.role == "user":
            await self.add_user(ev.text)
        elif ev.role == "results":
            await self._mount(Static(Text(ev.text, style="cyan"), classes="chat-results"))

    async def _tool_call(self, ev: ToolCall) -> None:
        if ev.state != "running":
            mark, style = ("⚙", "green") if ev.state == "done" else ("✗", "red")
            await self.add_line(f"{mark} {ev.name}({ev.summary}) {ev.detail}".rstrip(), style)

    async def _approval(self, ev: ApprovalRequest) -> None:
        """The write's header and its whole diff in the log, scrolled so that the header is at the top (the
        approval bar's keys scroll the rest); then the bar asks."""
        header = Static(approval_header(ev), classes="chat-diff-header")
        await self.log_view.mount(header)
        await self.log_view.mount(
            Static(Syntax(ev.diff, "diff", theme="ansi_dark", word_wrap=True), classes="chat-diff")
        )
        self.query_one(ApprovalBar).ask(ev)
        self.call_after_refresh(self.log_view.scroll_to_widget, header, animate=False, top=True)

    async def _decided(self, ev: ApprovalDecided) -> None:
        await self.add_line("applied" if ev.approved else "refused", "green" if ev.approved else "red")
        self.query_one(Input).focus()

    async def _notice(self, ev: AgentNotice) -> None:
        style = {"error": "bold red", "warning": "yellow"}.get(ev.level, "dim")
        await self.add_line(ev.text, style)

    async def _state(self, ev: AgentState) -> None:
        self.border_title = "chat" if ev.state == "idle" else f"chat · {ev.state} {ev.detail}".rstrip()
