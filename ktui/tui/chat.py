"""The chat pane: the conversation with the model, streamed as it is written, with the approval prompt for writes."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Markdown, Static
from textual.widgets._markdown import MarkdownStream

from ktui.core.events import (AgentNotice, AgentState, ApprovalDecided, ApprovalRequest, ChatDelta, ChatMessage,
                         ChatReplyDone, ChatReplyReset, Event, ToolCallEvent)

AGENT_EVENTS = (ChatMessage, ChatDelta, ChatReplyDone, ChatReplyReset, ToolCallEvent, ApprovalRequest,
                ApprovalDecided, AgentNotice, AgentState)


class AgentUpdate(Message):
    """An agent event, carried onto the UI loop."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class ApprovalBar(Static, can_focus=True):
    """Shown while a write waits: y applies it, n refuses it (one key each)."""

    BINDINGS = [Binding("y", "decide(True)", "Apply write"), Binding("n", "decide(False)", "Refuse write")]

    class Decided(Message):
        def __init__(self, request_id: int, approved: bool) -> None:
            super().__init__()
            self.request_id = request_id
            self.approved = approved

    request_id: int | None = None

    def ask(self, ev: ApprovalRequest) -> None:
        self.request_id = ev.request_id
        self.update(Text.assemble(("Apply this write to ", "bold"), (ev.path, "bold cyan"), ("?  ", "bold"),
                                  ("y", "bold green"), (" apply   ", ""), ("n", "bold red"), (" refuse", "")))
        self.display = True
        self.focus()

    def action_decide(self, approved: bool) -> None:
        if self.request_id is not None:
            self.post_message(self.Decided(self.request_id, approved))
            self.request_id = None
            self.display = False


class ChatPane(Vertical):
    """The log of the conversation, the approval bar and the input line."""

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="chat-log")
        yield ApprovalBar(id="approval")
        yield Input(placeholder="Message the agent (Enter sends, Esc stops it)", id="chat-input")

    def on_mount(self) -> None:
        self.query_one(ApprovalBar).display = False
        self._reply: Markdown | None = None
        self._stream: MarkdownStream | None = None
        self._reply_text = ""

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#chat-log", VerticalScroll)

    async def _mount(self, widget: Widget) -> None:
        await self.log_view.mount(widget)
        self.log_view.scroll_end(animate=False)

    async def add_line(self, text: str, style: str = "") -> None:
        await self._mount(Static(Text(text, style=style), classes="chat-line"))

    async def add_user(self, text: str) -> None:
        await self._mount(Static(Text.assemble(("you ", "bold cyan"), text), classes="chat-user"))

    async def delta(self, text: str) -> None:
        if self._reply is None:
            self._reply = Markdown("", classes="chat-reply")
            await self._mount(self._reply)
            self._stream = Markdown.get_stream(self._reply)
            self._reply_text = ""
        self._reply_text += text
        await self._stream.write(text)
        self.log_view.scroll_end(animate=False)

    async def end_reply(self, usage: str) -> None:
        if self._stream is not None:
            await self._stream.stop()
        self._reply, self._stream = None, None
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
        """Draw one agent event."""
        if isinstance(ev, ChatDelta):
            await self.delta(ev.text)
        elif isinstance(ev, ChatReplyDone):
            if self._reply is None and ev.text:
                await self.delta(ev.text)
            cost = f"${ev.cost_usd:.4f}" if ev.cost_usd is not None else "cost n/a"
            total = f"${ev.session_cost_usd:.4f}" if ev.session_cost_usd is not None else "cost n/a"
            await self.end_reply(f"{ev.prompt_tokens} in + {ev.completion_tokens} out tokens, {cost} · session "
                                 f"{ev.session_tokens} tokens, {total}")
            self.border_subtitle = f"session {ev.session_tokens} tokens, {total}"
        elif isinstance(ev, ChatReplyReset):
            await self.reset_reply()
        elif isinstance(ev, ChatMessage):
            if ev.role == "user":
                await self.add_user(ev.text)
            elif ev.role == "results":
                await self._mount(Static(Text(ev.text, style="cyan"), classes="chat-results"))
        elif isinstance(ev, ToolCallEvent):
            if ev.state != "running":
                mark, style = ("⚙", "green") if ev.state == "done" else ("✗", "red")
                await self.add_line(f"{mark} {ev.name}({ev.summary}) {ev.detail}".rstrip(), style)
        elif isinstance(ev, ApprovalRequest):
            await self._mount(Static(Syntax(ev.diff, "diff", theme="ansi_dark", word_wrap=True), classes="chat-diff"))
            self.query_one(ApprovalBar).ask(ev)
        elif isinstance(ev, ApprovalDecided):
            await self.add_line("applied" if ev.approved else "refused", "green" if ev.approved else "red")
            self.query_one(Input).focus()
        elif isinstance(ev, AgentNotice):
            style = {"error": "bold red", "warning": "yellow"}.get(ev.level, "dim")
            await self.add_line(ev.text, style)
        elif isinstance(ev, AgentState):
            self.border_title = "chat" if ev.state == "idle" else f"chat · {ev.state} {ev.detail}".rstrip()
