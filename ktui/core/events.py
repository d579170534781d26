"""Every event of a ktui session flows through one ``EventBus``.

The scheduler, the ladder and the file watcher publish; the TUI, ``ktui run`` and (later) the session recorder
subscribe. Events are small frozen dataclasses under one ``Event`` base, which keeps a registry of every kind by
its class name: ``event.to_json()`` gives a JSON-able dict with the kind under ``"event"``, and
``Event.from_json(d)`` rebuilds the event, nested ``RungResult``/``LadderResult`` and tuples included, so that
recording a session is one subscriber and replaying it one loop.

This module holds the core's vocabulary (files, queue, ladder, workers, notices). The agent's (chat, tool calls,
approvals) is in ``ktui.agent.events``, on the same base and in the same registry; import it before
``from_json`` meets one of its kinds.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal

from ktui.core.log import get_logger
from ktui.core.results import LadderResult, RungResult

Level = Literal["info", "warning", "error"]
"""How loud a one-line message is: ``info`` (dim, passes), ``warning`` (yellow), ``error`` (red; something failed)."""

WorkerStateWord = Literal["starting", "ready", "restarting", "failed", "stopped"]
"""A worker process's state: ``starting`` (spawned, importing torch), ``ready`` (said hello), ``restarting`` (after a
crash or a hang), ``failed`` (could not start: no hello, or a fatal error at startup), ``stopped`` (closed)."""


@dataclass(frozen=True)
class Event:
    """The base of every event: ``at`` is when it happened (``time.time()``, seconds since the epoch).

    Each subclass registers itself by its class name, its ``kind``; two event classes may not share a name.
    """

    at: float = field(default_factory=time.time, kw_only=True)

    _registry: ClassVar[dict[str, type[Event]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        old = Event._registry.get(cls.__name__)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"two events named {cls.__name__}: {old.__module__} and {cls.__module__}")
        Event._registry[cls.__name__] = cls

    @property
    def kind(self) -> str:
        """The class name, which ``to_json`` writes under ``"event"``."""
        return type(self).__name__

    @classmethod
    def kinds(cls) -> dict[str, type[Event]]:
        """Every registered event class by kind (those of modules imported so far)."""
        return dict(Event._registry)

    def to_json(self) -> dict[str, Any]:
        """``{"event": kind, field: value...}`` with results as their own JSON and tuples as lists."""
        d: dict[str, Any] = {"event": self.kind}
        for f in fields(self):
            d[f.name] = _encode(getattr(self, f.name))
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Event:
        """The event that ``to_json`` wrote (any registered kind when called on ``Event``).

        Raises:
            KeyError: an unknown kind (not registered: its module was not imported).
            TypeError: the kind is not a subclass of ``cls``.
        """
        kind = d.get("event")
        target = Event._registry.get(kind) if isinstance(kind, str) else None
        if target is None:
            raise KeyError(f"unknown event kind {kind!r} (agent events need ktui.agent.events imported)")
        if not issubclass(target, cls):
            raise TypeError(f"{kind} is not a {cls.__name__}")
        hints = typing.get_type_hints(target)
        return target(
            **{f.name: _decode(hints.get(f.name, Any), d[f.name]) for f in fields(target) if f.init and f.name in d}
        )


def _encode(v: Any) -> Any:
    if hasattr(v, "to_json"):
        return v.to_json()
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (tuple, list)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    return v


def _decode(tp: Any, v: Any) -> Any:
    """``v`` (from JSON) as the annotated type ``tp``: results rebuilt, lists to tuples, enums from their values."""
    if v is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        return _decode(members[0], v) if len(members) == 1 else v
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], x) for x in v)
        return tuple(_decode(a, x) for a, x in zip(args, v)) if args else tuple(v)
    if origin is list:
        (arg,) = typing.get_args(tp) or (Any,)
        return [_decode(arg, x) for x in v]
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return tp(v)
        if isinstance(v, dict) and hasattr(tp, "from_json"):
            return tp.from_json(v)
    return v


# -- files and the queue -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileChanged(Event):
    """A save (or a deletion) under ``kernels/`` or ``references/``, after debouncing; ``path`` is absolute."""

    path: str


@dataclass(frozen=True)
class ResultStored(Event):
    """A version's stored result changed on disk (written by this session or another ktui process)."""

    problem: str
    version: str


@dataclass(frozen=True)
class QueueChanged(Event):
    """What runs now and what waits, in order.

    Attributes:
        running: the ``problem/version`` whose ladder runs, or None.
        rung: the rung it is on (None before the first, or when nothing runs).
        waiting: the versions queued behind it, in the order they will run.
    """

    running: str | None
    rung: str | None
    waiting: tuple[str, ...]


# -- the ladder ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LadderStarted(Event):
    """A version's ladder starts.

    Attributes:
        key: ``problem/version``.
        run_id: this run's number in the session (the events of one run share it).
        source_sha256: the hash of the kernel snapshot the run uses.
        rungs: the rungs it will run, in order.
    """

    key: str
    run_id: int
    source_sha256: str
    rungs: tuple[str, ...]


@dataclass(frozen=True)
class RungStarted(Event):
    """Rung ``rung`` of run ``run_id`` of ``key`` (``problem/version``) starts."""

    key: str
    run_id: int
    rung: str


@dataclass(frozen=True)
class RungProgress(Event):
    """A running rung's progress, from its worker: ``done`` of ``total`` items (correctness cases, benchmark specs),
    with an optional one-line ``detail`` ("spec=(4099, bf16) dist=shifted"). Only the latest one matters: the screen
    coalesces bursts."""

    key: str
    run_id: int
    rung: str
    done: int
    total: int
    detail: str = ""
    limit_s: float = 0.0  # the step's own limit without progress, seconds, where it is not the rung's (0: the rung's)
    case: str = ""  # the case the worker runs now (``spec=(7, 1025, 300, bf16) seed=... layout=...``), '' between


@dataclass(frozen=True)
class FirstVerdict(Event):
    """The correctness rung's first verdict (issue 11), while its other cases still run: ``result`` is the rung as
    judged on the first sweep alone (every test spec once, native inputs, the first seed: ``first`` cases of
    ``ktui.core.ladder.cases``), ``cases`` how many, ``seconds`` since the ladder started. Enough to say "wrong" or
    "probably right"; the rung's own ``RungFinished`` carries the full verdict."""

    key: str
    run_id: int
    result: RungResult
    cases: int
    seconds: float


@dataclass(frozen=True)
class RungFinished(Event):
    """A rung of run ``run_id`` of ``key`` ended: ``result`` says ok, failed or skipped, with its figures."""

    key: str
    run_id: int
    result: RungResult


@dataclass(frozen=True)
class LadderFinished(Event):
    """Run ``run_id`` of ``key`` ended; ``result`` (merged with the same source's other rungs) is also stored."""

    key: str
    run_id: int
    result: LadderResult


CANCELLED = "the run was cancelled"
"""``WorkerState.detail`` of a worker restarted because its run was cancelled (the cancel's own notice says so)."""


@dataclass(frozen=True)
class WorkerState(Event):
    """A worker process (``role``: ``candidate``, ``judge`` or ``compiler``) changed ``state``; ``detail`` says why
    or gives the pid."""

    role: str
    state: WorkerStateWord
    detail: str = ""


@dataclass(frozen=True)
class Notice(Event):
    """A one-line message for the user (a file that is not a kernel, a failed copy, a subscriber that broke...)."""

    level: Level
    message: str


# -- the bus -------------------------------------------------------------------------------------------------------
Subscriber = Callable[[Event], None]


def _name_of(fn: Subscriber) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class EventBus:
    """A synchronous, thread-safe publish/subscribe hub.

    Subscribers run on the publishing thread, in subscription order. A subscriber that raises does not stop the
    others (a broken view must not break the ladder): the failure goes to ``log`` with its traceback (by default the
    ``ktui.events`` logger, which ``ktui.core.log.open_log`` sends to ``.ktui/logs/ktui.log``) and, the first time
    for that subscriber and kind, a ``Notice(level="error")`` goes to every subscriber.
    """

    def __init__(self, log: logging.Logger | None = None) -> None:
        self._subs: list[Subscriber] = []
        self._lock = threading.Lock()
        self._reported: set[tuple[int, str]] = set()
        self.log = log or get_logger("events")

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
        """Call every subscriber with ``event``, now, on this thread."""
        with self._lock:
            subs = list(self._subs)
        for fn in subs:
            try:
                fn(event)
            except Exception as exc:
                self._failed(fn, event, exc)

    def _failed(self, fn: Subscriber, event: Event, exc: Exception) -> None:
        key = (id(fn), event.kind)
        with self._lock:
            first = key not in self._reported
            self._reported.add(key)
        name = _name_of(fn)
        if not first:
            self.log.debug("event subscriber %s failed again on %s: %r", name, event.kind, exc)
            return
        self.log.error("event subscriber %s failed on %s", name, event.kind, exc_info=exc)
        self.publish(
            Notice(
                level="error",
                message=f"{name} failed on {event.kind}: {type(exc).__name__}: {exc} "
                "(traceback in .ktui/logs/ktui.log)",
            )
        )
