"""The agent's events: the chat, the model's tool calls, the approval of writes, the agent's state.

They share the core's ``Event`` base (``ktui.core.events``) and its kind registry, so one bus carries them beside
the ladder's events and ``Event.from_json`` rebuilds them once this module is imported. The agent publishes them;
the TUI's chat pane and ``ktui agent``'s transcript draw them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ktui.core.events import Event, Level

ChatRole = Literal["user", "assistant", "results"]
"""Who wrote a chat message: the human (``user``), the model (``assistant``), or ktui sending ladder results back to
the model after an automatic round (``results``)."""

ToolCallState = Literal["running", "done", "error"]
"""A tool call ``running``, ``done``, or ended in an ``error`` (a refused write, a bad argument, an unknown tool)."""

AgentStateWord = Literal["idle", "thinking", "tool", "approval", "ladder", "stopped"]
"""What the agent does: ``idle`` (waits for the human), ``thinking`` (a model request streams), ``tool`` (runs a
tool), ``approval`` (a write waits for y/n), ``ladder`` (waits for ladder results), ``stopped``."""


@dataclass(frozen=True)
class ChatMessage(Event):
    """A whole message in the chat: the human's (``user``), a complete reply of the model (``assistant``), or the
    ladder results ktui sends the model after an automatic round (``results``)."""

    role: ChatRole
    text: str


@dataclass(frozen=True)
class ChatDelta(Event):
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True)
class ChatReplyDone(Event):
    """The model's reply ended. Tokens of this turn and of the session; cost in USD (None: litellm has no price).

    Attributes:
        text: the whole reply.
        prompt_tokens, completion_tokens: this turn's tokens, as the provider counted them.
        cost_usd: this turn's cost in USD, or None.
        session_tokens: every token of the session so far.
        session_cost_usd: the session's cost in USD, or None while no turn was priced.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    session_tokens: int
    session_cost_usd: float | None


@dataclass(frozen=True)
class ChatReplyReset(Event):
    """The streamed part of a reply is void (the connection dropped; the request is being retried)."""


@dataclass(frozen=True)
class ToolCall(Event):
    """The model called a tool.

    Attributes:
        call_id: the model's id of the call.
        name: the tool (``write_kernel``, ``run_ladder``, ``read_file``...).
        summary: its arguments in one short line.
        state: ``running``, ``done`` or ``error``.
        detail: what happened (the error, or the file written).
    """

    call_id: str
    name: str
    summary: str
    state: ToolCallState
    detail: str = ""


@dataclass(frozen=True)
class ModelToolCall(Event):
    """A tool call as the model wrote it in the reply that just ended (the ``ChatReplyDone`` before it), published
    before the tool runs: with ``ToolResult``, what a resumed session (``ktui.sessions.resume``) gives the model
    back in its history, as the live agent kept it (``ToolCall`` reports the call's progress, its arguments
    shortened).

    Attributes:
        call_id: the model's id of the call.
        name: the tool, as the model named it (an unknown name too).
        arguments: the arguments' raw JSON text, as the model wrote it (malformed JSON too).
    """

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolResult(Event):
    """What a tool call gave the model: the history's ``tool`` message (``call_id``, its whole ``content``: the
    file read, the ladder results, the error or the refusal)."""

    call_id: str
    content: str


@dataclass(frozen=True)
class ApprovalRequest(Event):
    """A write waits for the human: y applies it, n refuses it.

    Attributes:
        request_id: answer it with ``Agent.decide(request_id, approved)``.
        path: the file, relative to the workspace.
        diff: a unified diff against ``base``: the file's current content, or for a new file the version it is
            derived from (the one the model read, else the selected or best version of the problem), or the empty
            file when there is none.
        new_file: True when the file does not exist yet.
        base: the file the diff is against, relative to the workspace ("" for the empty file).
        added, removed: the diff's ``+`` and ``-`` lines (file headers not counted).
    """

    request_id: int
    path: str
    diff: str
    new_file: bool
    base: str = ""
    added: int = 0
    removed: int = 0


@dataclass(frozen=True)
class ApprovalDecided(Event):
    """The human answered approval request ``request_id``: the write was applied (``approved``) or refused."""

    request_id: int
    approved: bool


@dataclass(frozen=True)
class AgentNotice(Event):
    """One line for the chat: a retry, a failure, a refused tool call, the setup hint."""

    level: Level
    text: str


@dataclass(frozen=True)
class AgentState(Event):
    """The agent's ``state`` changed; ``detail`` names the model, the tool or the versions it waits for."""

    state: AgentStateWord
    detail: str = ""


AGENT_EVENTS: tuple[type[Event], ...] = (
    ChatMessage,
    ChatDelta,
    ChatReplyDone,
    ChatReplyReset,
    ToolCall,
    ModelToolCall,
    ToolResult,
    ApprovalRequest,
    ApprovalDecided,
    AgentNotice,
    AgentState,
)
"""Every agent event kind (the chat pane draws these)."""
