"""Every event of a ktui session flows through one ``EventBus``.

The scheduler, the ladder and the file watcher publish; the TUI, ``ktui run`` and (later) the session recorder
subscribe. Events are small frozen dataclasses with a ``to_json`` so that recording is one subscriber.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ktui.core.results import LadderResult, RungResult


@dataclass(frozen=True)
class Event:
    at: float = field(default_factory=time.time, kw_only=True)

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"event": self.kind}
        for k, v in self.__dict__.items():
            d[k] = v.to_json() if hasattr(v, "to_json") else v
        return d


@dataclass(frozen=True)
class FileChanged(Event):
    """A save under ``kernels/`` or ``references/`` (after debouncing)."""

    path: str


@dataclass(frozen=True)
class ResultStored(Event):
    """A version's stored result changed on disk (written by this session or another ktui process)."""

    problem: str
    version: str


@dataclass(frozen=True)
class QueueChanged(Event):
    """What runs now (``problem/version`` and rung) and what waits, in order."""

    running: str | None
    rung: str | None
    waiting: tuple[str, ...]


@dataclass(frozen=True)
class LadderStarted(Event):
    key: str  # problem/version
    run_id: int
    source_sha256: str
    rungs: tuple[str, ...]


@dataclass(frozen=True)
class RungStarted(Event):
    key: str
    run_id: int
    rung: str


@dataclass(frozen=True)
class RungProgress(Event):
    """A running rung's progress, from its worker: ``done`` of ``total`` items (correctness cases, benchmark specs),
    with an optional one-line ``detail`` ("spec=(4099, bf16) dist=shifted")."""

    key: str
    run_id: int
    rung: str
    done: int
    total: int
    detail: str = ""


@dataclass(frozen=True)
class RungFinished(Event):
    key: str
    run_id: int
    result: RungResult


@dataclass(frozen=True)
class LadderFinished(Event):
    key: str
    run_id: int
    result: LadderResult


@dataclass(frozen=True)
class WorkerState(Event):
    """A worker process changed state: ``starting``, ``ready``, ``restarting`` (after a crash or a hang), ``stopped``."""

    role: str
    state: str
    detail: str = ""


@dataclass(frozen=True)
class Notice(Event):
    """A one-line message for the user (a file that is not a kernel, a failed copy...)."""

    level: str  # "info" | "warning" | "error"
    message: str


Subscriber = Callable[[Event], None]


class EventBus:
    """A synchronous, thread-safe publish/subscribe hub.

    Subscribers run on the publishing thread, in subscription order; a subscriber that raises is reported to
    stderr once and does not stop the others (a broken view must not break the ladder).
    """

    def __init__(self) -> None:
        self._subs: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Add ``fn``; returns a function that removes it."""
        with self._lock:
            self._subs.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subs:
                    self._subs.remove(fn)

        return unsubscribe

    def publish(self, event: Event) -> None:
        with self._lock:
            subs = list(self._subs)
        for fn in subs:
            try:
                fn(event)
            except Exception as exc:  # noqa: BLE001 - a subscriber's bug must not stop the ladder
                import sys

                print(f"ktui: event subscriber {fn!r} failed on {event.kind}: {exc!r}", file=sys.stderr)


# -- the agent -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChatMessage(Event):
    """A whole message in the chat: the human's (``user``), or a complete reply of the model (``assistant``)."""

    role: str
    text: str


@dataclass(frozen=True)
class ChatDelta(Event):
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True)
class ChatReplyDone(Event):
    """The model's reply ended. Tokens of this turn and of the session; cost in USD (None: litellm has no price)."""

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
class ToolCallEvent(Event):
    """The model called a tool: ``state`` is ``running``, ``done`` or ``error`` (``detail`` says what happened)."""

    call_id: str
    name: str
    summary: str
    state: str
    detail: str = ""


@dataclass(frozen=True)
class ApprovalRequest(Event):
    """A write waits for the human: y applies it, n refuses it."""

    request_id: int
    path: str
    diff: str
    new_file: bool


@dataclass(frozen=True)
class ApprovalDecided(Event):
    request_id: int
    approved: bool


@dataclass(frozen=True)
class AgentNotice(Event):
    """One line for the chat: a retry, a failure, a refused tool call, the setup hint."""

    level: str  # info | warning | error
    text: str


@dataclass(frozen=True)
class AgentState(Event):
    """``idle``, ``thinking``, ``tool``, ``approval``, ``ladder`` (waiting for results), ``stopped``."""

    state: str
    detail: str = ""
