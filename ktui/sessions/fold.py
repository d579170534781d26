"""Replaying a session log: a pure fold over its records.

``fold(records)`` is the state of the session after those records; ``step(state, record)`` adds one, so the state
as of event N is ``fold(records[:N])`` and a replay that scrubs forward and back either folds again or keeps the
list that ``scan(records)`` gives (``scan(records)[N] == fold(records[:N])``). Nothing here reads a file, a clock
or the environment: the same records always give the same state, and no record, however garbled, makes it raise
(a record that cannot be used is counted in ``ReplayState.skipped`` and named in ``ReplayState.problems``).

``ReplayState`` is a frozen dataclass whose collections are never changed once built (each ``step`` copies what it
changes, copy-on-write), so earlier states stay valid beside later ones.

``timeline(records)`` indexes the records for navigation: where each ladder result, chat message and edit is, and
every version's verdict and speedup in order.

What each record becomes (``ktui.sessions.log`` describes the envelope):

- ``session``: ``meta``; ``device``: ``device``; ``end``: ``ended`` and ``end_reason``;
- ``resumed`` (``ktui --resume`` continued the session in the same log): its position in ``resumes``; the session
  is live again (``ended`` False, ``end_reason`` ""), and what belonged to the earlier process is gone (the runs
  in flight, the queue, the workers' and the agent's states, a reply streaming); the chat, results and edits go on;
  the device is its ``device`` when it has one. A tool call's id is matched only among the calls made since the
  last ``resumed`` (a new process's model may number its calls from 1 again);
- ``source``: the file's current hash in ``sources``, and an ``Edit`` when its content differs from the last one
  seen for that path (the first sighting is an edit too: the file as the session found it);
- ``LadderFinished``: a ``VersionRun`` in ``runs`` and in its version's ``history``, its result as the version's
  latest in ``results``; a cancelled run (``ktui.core.scheduler.is_cancelled``) is a ``Cancel`` instead and leaves
  the version's result as it was, as the live session does;
- ``LadderStarted``/``RungStarted``/``RungFinished``/``FirstVerdict``: the run in flight in ``live``;
  ``QueueChanged``: ``queue``;
- ``ChatMessage``, ``ChatReplyDone``, ``ToolCall`` (one entry per call id, updated in place as its state changes),
  ``ApprovalRequest``, ``ApprovalDecided``, ``AgentNotice``: ``chat``; ``ChatDelta``: ``streaming`` (the reply as
  streamed so far; a reset or the reply's end clears it); ``ChatReplyDone`` also the token and cost figures;
- ``Notice``: ``notices``; ``WorkerState``: ``workers``; ``AgentState``: ``agent``;
- any other registered event kind is counted in ``events`` and changes nothing else; an unknown kind, or data that
  does not rebuild its event, is ``skipped``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

import ktui.agent.events as agent_events  # noqa: F401 - registers the agent's event kinds for Event.from_json
from ktui.agent.events import (
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
from ktui.core import report
from ktui.core.events import (
    Event,
    FirstVerdict,
    LadderFinished,
    LadderStarted,
    Notice,
    QueueChanged,
    RungFinished,
    RungStarted,
    WorkerState,
)
from ktui.core.results import LadderResult, RungResult, Status, device_label
from ktui.core.scheduler import CANCELLED
from ktui.sessions.log import Record

LOG_RECORD_TYPES = ("session", "source", "end", "device", "resumed", "artifact")
"""The log's own record types (not events): ``decode`` gives None for them and they are not ``skipped``."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen(d: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(d)


# -- what the state holds ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecTiming:
    """One benchmark spec of a run: ``label``, the version's median (µs), the reference's median (µs, None when not
    timed), the speedup (reference median / version median, None when there is no reference time)."""

    label: str
    median_us: float | None
    ref_median_us: float | None
    speedup: float | None


@dataclass(frozen=True)
class VersionRun:
    """One finished, not cancelled, ladder run of a version (a ``LadderFinished`` record).

    Attributes:
        index: the record's position in the records folded (the state right after it is ``fold(records[:index+1])``).
        line: its line in the log file (0 when the record was made by hand).
        t: when it finished, seconds since the epoch.
        key: ``problem/version``.
        run_id: the run's number in the session.
        result: the ladder result as recorded.
        verdict: ``ktui.core.report.verdict``'s text: ``✓ 1.23x``, ``✓ ok``, ``✗ correctness``...
        ok: every rung ok or skipped.
        correct: the correctness rung passed (True), failed (False), or did not run or was skipped (None).
        speedup: the worst benchmark speedup over the reference (``LadderResult.worst_speedup``), None without one.
        verified_speedup: ``speedup`` when the correctness rung passed, else None (a fast wrong kernel ranks nowhere).
        seconds: how long the whole ladder took.
        source_sha256: the hash of the version's source as it ran.
        device: ``device_label`` of the device it ran on.
        timings: the benchmark specs' medians, in the rung's order (empty without a benchmark that ran).
    """

    index: int
    line: int
    t: float
    key: str
    run_id: int
    result: LadderResult
    verdict: str
    ok: bool
    correct: bool | None
    speedup: float | None
    verified_speedup: float | None
    seconds: float
    source_sha256: str
    device: str
    timings: tuple[SpecTiming, ...] = ()


@dataclass(frozen=True)
class Cancel:
    """A run that was cancelled (a newer save, the cancel key, ctrl+c): no verdict. ``rung``: the rung it was on;
    ``reason``: the cancel's message."""

    index: int
    t: float
    key: str
    run_id: int
    rung: str
    reason: str


@dataclass(frozen=True)
class Edit:
    """A file's content as the session first saw it or after it changed (a ``source`` record with a new hash).

    Attributes:
        index: the record's position in the records folded.
        t: seconds since the epoch.
        path: relative to the workspace (``kernels/softmax/v2.py``).
        sha256: the content's hash; the content is ``sessions/<id>/blobs/<sha256>``.
        previous: the hash of this path's content before (None for the first sighting).
        role: ``kernel`` or ``reference`` (as recorded; "" when missing).
        bytes: the content's size (-1 when not recorded).
    """

    index: int
    t: float
    path: str
    sha256: str
    previous: str | None
    role: str
    bytes: int


@dataclass(frozen=True)
class ChatEntry:
    """One entry of the chat: ``event`` is a ``ChatMessage`` (user, results), a ``ChatReplyDone`` (the model's
    reply, with its tokens and cost), a ``ToolCall`` (its latest state), an ``ApprovalRequest``, an
    ``ApprovalDecided`` or an ``AgentNotice``; ``index`` is where it entered the chat (a tool call's first
    record), ``updated`` the record that last changed it."""

    index: int
    updated: int
    event: Event

    @property
    def role(self) -> str:
        """``user``, ``assistant``, ``results``, ``tool``, ``approval``, ``decision`` or ``notice``."""
        ev = self.event
        if isinstance(ev, ChatMessage):
            return ev.role
        if isinstance(ev, ChatReplyDone):
            return "assistant"
        if isinstance(ev, ToolCall):
            return "tool"
        if isinstance(ev, ApprovalRequest):
            return "approval"
        if isinstance(ev, ApprovalDecided):
            return "decision"
        return "notice"

    @property
    def text(self) -> str:
        """The entry in one string: the message, the reply, ``name(summary): state detail``, the approval's path."""
        ev = self.event
        if isinstance(ev, (ChatMessage, ChatReplyDone)):
            return ev.text
        if isinstance(ev, ToolCall):
            tail = f" {ev.detail}" if ev.detail else ""
            return f"{ev.name}({ev.summary}): {ev.state}{tail}"
        if isinstance(ev, ApprovalRequest):
            what = "new file" if ev.new_file else "edit"
            return f"approve {what} {ev.path} (+{ev.added} -{ev.removed})?"
        if isinstance(ev, ApprovalDecided):
            return f"request {ev.request_id} {'approved' if ev.approved else 'refused'}"
        if isinstance(ev, AgentNotice):
            return ev.text
        return ""


@dataclass(frozen=True)
class LiveRun:
    """A ladder run in flight: its ``run_id``, the rungs it will run, the one under way, those finished so far and
    the correctness rung's first verdict when it came."""

    run_id: int
    rungs: tuple[str, ...]
    rung: str | None
    finished: tuple[RungResult, ...] = ()
    first_verdict: RungResult | None = None


@dataclass(frozen=True)
class ReplayState:
    """The session as of some record. Every collection is read-only and shared with later states where unchanged.

    Attributes:
        count: how many records were folded (``fold(records[:N]).count == N``).
        t: the time of the last record folded (None before any).
        meta: the ``session`` record's data (None before it).
        device: the ``device`` record's data, else the metadata's ``device``, else None.
        ended: an ``end`` record was folded and no ``resumed`` one after it; ``end_reason`` its reason.
        resumes: the positions of the ``resumed`` records (where each continuation of the session starts).
        results: per ``problem/version``, the latest (not cancelled) ``LadderResult``.
        history: per ``problem/version``, its runs in order.
        runs: every run in order.
        cancels: every cancelled run in order.
        live: the runs in flight, by ``problem/version``.
        queue: the latest ``QueueChanged`` (what runs, its rung, what waits), or None.
        edits: the edits in order; ``sources``: each path's latest hash.
        artifacts: each artifact's path (a dump, an Nsight Compute report) and its latest hash (``artifact``
            records; the bytes are in ``blobs/<sha256>`` when the record says ``stored``).
        chat: the chat in order; ``streaming``: the reply streamed so far ("" when none streams).
        prompt_tokens, completion_tokens: summed over the replies; ``session_tokens`` and ``session_cost_usd``
            as the last reply reported them; ``cost_usd``: the sum of the replies' costs (None while none was priced).
        notices: ``Notice`` events in order; ``workers``: each worker role's latest ``WorkerState``;
            ``agent``: the latest ``AgentState``; ``model``: the model the first ``thinking`` state named.
        events: how many records rebuilt an event (log records not counted).
        skipped: records that could not be used (an unknown kind, data that does not rebuild its event, an event
            whose fields make no sense); ``problems`` says which, with the log line.
    """

    count: int = 0
    t: float | None = None
    meta: Mapping[str, Any] | None = None
    device: Mapping[str, Any] | None = None
    ended: bool = False
    end_reason: str = ""
    resumes: tuple[int, ...] = ()
    results: Mapping[str, LadderResult] = field(default_factory=lambda: _EMPTY)
    history: Mapping[str, tuple[VersionRun, ...]] = field(default_factory=lambda: _EMPTY)
    runs: tuple[VersionRun, ...] = ()
    cancels: tuple[Cancel, ...] = ()
    live: Mapping[str, LiveRun] = field(default_factory=lambda: _EMPTY)
    queue: QueueChanged | None = None
    edits: tuple[Edit, ...] = ()
    sources: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    artifacts: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    chat: tuple[ChatEntry, ...] = ()
    streaming: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    session_tokens: int = 0
    cost_usd: float | None = None
    session_cost_usd: float | None = None
    notices: tuple[Notice, ...] = ()
    workers: Mapping[str, WorkerState] = field(default_factory=lambda: _EMPTY)
    agent: AgentState | None = None
    model: str = ""
    events: int = 0
    skipped: int = 0
    problems: tuple[str, ...] = ()

    @property
    def versions(self) -> tuple[str, ...]:
        """Every ``problem/version`` that has a result, in the order of their first run."""
        return tuple(self.history)

    @property
    def problems_seen(self) -> tuple[str, ...]:
        """Every problem that has a run, in the order of its first run."""
        return tuple(dict.fromkeys(k.split("/", 1)[0] for k in self.history))

    @property
    def best(self) -> VersionRun | None:
        """The run with the highest verified speedup (correctness passed), the earliest on a tie; None without one."""
        best: VersionRun | None = None
        for r in self.runs:
            if r.verified_speedup is not None and (best is None or r.verified_speedup > (best.verified_speedup or 0)):
                best = r
        return best

    @property
    def cost(self) -> float | None:
        """The session's cost in USD: the sum of the replies' costs, else the last ``session_cost_usd``."""
        return self.cost_usd if self.cost_usd is not None else self.session_cost_usd


# -- decoding ------------------------------------------------------------------------------------------------------
def decode(record: Record) -> Event | None:
    """The event a record holds (``Event.from_json({"event": type, **data})``, its ``at`` the record's ``t`` when
    the data has none), or None: a log record (``session``, ``source``, ``end``, ``device``), an unknown kind, data
    that does not rebuild the event, or an event whose fields are not of their annotated types (``ill_typed``: a
    ``text`` that is a number, a ``result`` that is a string...). Never raises."""
    ev = _decode(record)
    return ev if isinstance(ev, Event) else None


def _decode(record: Record) -> Event | str:
    """The event, or why there is none."""
    try:
        if record.type in LOG_RECORD_TYPES:
            return "a log record"
        if not isinstance(record.data, dict):
            return "its data is not an object"
        if record.type not in Event.kinds():
            return "unknown event kind"
        payload = {k: v for k, v in record.data.items() if k != "event"}
        at = payload.get("at")
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
            payload["at"] = record.t  # never the clock's time: the same record always decodes to the same event
        try:
            ev = Event.from_json({**payload, "event": record.type})
        except Exception as exc:
            return f"its data does not rebuild the event ({type(exc).__name__}: {str(exc)[:60]})"
        bad = ill_typed(ev)
        return f"its {bad}" if bad else ev
    except Exception as exc:  # (nothing above should raise; a decoder must not, whatever the record)
        return f"{type(exc).__name__}: {str(exc)[:60]}"


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def ill_typed(value: Any, tp: Any = None, where: str = "") -> str | None:
    """What in ``value`` (an event, or a value annotated ``tp``) is not of its annotated type, as ``field text is
    int, not str``; None when everything is. Dataclasses (events, ``LadderResult``, ``RungResult``, ``ErrorInfo``)
    are checked field by field, lists and tuples item by item; ``dict`` values (figures, the device) and ``Any``
    are JSON and not looked into."""
    tp = type(value) if tp is None else tp
    origin = typing.get_origin(tp)
    name = where or "value"
    if tp is Any:
        return None
    if origin is Literal:
        return None if value in typing.get_args(tp) else f"field {name} is {value!r}, not one of {typing.get_args(tp)}"
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(tp)
        if any(ill_typed(value, m, where) is None for m in members):
            return None
        return f"field {name} is {type(value).__name__}, not {tp}"
    if origin in (list, tuple):
        want = list if origin is list else tuple
        if not isinstance(value, want):
            return f"field {name} is {type(value).__name__}, not {want.__name__}"
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        for i, item in enumerate(value):
            bad = ill_typed(item, args[0] if args else Any, f"{name}[{i}]")
            if bad:
                return bad
        return None
    if origin is dict or tp is dict:
        return None if isinstance(value, dict) else f"field {name} is {type(value).__name__}, not dict"
    if tp is type(None):
        return None if value is None else f"field {name} is {type(value).__name__}, not None"
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"field {name} is {type(value).__name__}, not float"
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"field {name} is {type(value).__name__}, not int"
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, tp):
            return f"field {name} is {type(value).__name__}, not {tp.__name__}"
        hints = _hints(tp)
        for f in dataclasses.fields(tp):
            bad = ill_typed(getattr(value, f.name), hints.get(f.name, Any), f"{where}.{f.name}" if where else f.name)
            if bad:
                return bad
        return None
    if isinstance(tp, type):
        return None if isinstance(value, tp) else f"field {name} is {type(value).__name__}, not {tp.__name__}"
    return None


# -- the fold ------------------------------------------------------------------------------------------------------
def fold(records: Iterable[Record], state: ReplayState | None = None) -> ReplayState:
    """The state after ``records`` (from ``state``, default the empty one). Never raises."""
    s = state if state is not None else ReplayState()
    for r in records:
        s = step(s, r)
    return s


def scan(records: Sequence[Record]) -> list[ReplayState]:
    """Every intermediate state: ``scan(records)[n] == fold(records[:n])`` for n in 0..len(records)."""
    out = [ReplayState()]
    for r in records:
        out.append(step(out[-1], r))
    return out


def step(state: ReplayState, record: Record) -> ReplayState:
    """``state`` with one more record folded in (``state`` itself is not changed). Never raises: a record that
    cannot be used counts in ``skipped``."""
    index = state.count
    t: float | None = state.t
    try:
        if math.isfinite(float(record.t)):
            t = float(record.t)
    except Exception:
        pass
    base = replace(state, count=index + 1, t=t)
    try:
        return _apply(base, record, index)
    except Exception as exc:  # a decoded event whose fields are not what its annotations say (garbled data)
        return _skip(base, record, f"{type(exc).__name__}: {str(exc)[:80]}")


def _line(record: Record) -> int:
    line = getattr(record, "line", 0)
    return line if isinstance(line, int) else 0


def _skip(state: ReplayState, record: Record, why: str) -> ReplayState:
    where = f"line {_line(record)}: " if _line(record) else ""
    kind = getattr(record, "type", "?")
    return replace(
        state,
        skipped=state.skipped + 1,
        problems=(*state.problems, f"{where}{str(kind)[:60]} record skipped: {why}"),
    )


def _str(d: Mapping[str, Any], key: str, default: str = "") -> str:
    v = d.get(key, default)
    return v if isinstance(v, str) else default


def _apply(s: ReplayState, record: Record, index: int) -> ReplayState:
    type_ = record.type
    data = record.data if isinstance(record.data, dict) else {}
    if type_ == "session":
        if s.meta is not None:
            return _skip(s, record, "a second session record")
        meta = dict(data)
        dev = meta.get("device")
        return replace(
            s, meta=_frozen(meta), device=s.device if s.device is not None or not isinstance(dev, dict) else dev
        )
    if type_ == "device":
        return replace(s, device=_frozen(dict(data)))
    if type_ == "end":
        return replace(s, ended=True, end_reason=_str(data, "reason"))
    if type_ == "resumed":
        dev = data.get("device")
        return replace(
            s,
            ended=False,
            end_reason="",
            resumes=(*s.resumes, index),
            live=_EMPTY,
            queue=None,
            workers=_EMPTY,
            agent=None,
            streaming="",
            device=_frozen(dict(dev)) if isinstance(dev, dict) else s.device,
        )
    if type_ == "source":
        return _source(s, record, data, index)
    if type_ == "artifact":
        path, sha = data.get("path"), data.get("sha256")
        if not isinstance(path, str) or not path or not isinstance(sha, str) or not sha:
            return _skip(s, record, "an artifact record without a path and a sha256")
        return replace(s, artifacts=_frozen({**s.artifacts, path: sha}))
    ev = _decode(record)
    if isinstance(ev, str):
        return _skip(s, record, ev)
    s = replace(s, events=s.events + 1)
    return _event(s, record, ev, index)


def _source(s: ReplayState, record: Record, data: Mapping[str, Any], index: int) -> ReplayState:
    path, sha = data.get("path"), data.get("sha256")
    if not isinstance(path, str) or not path or not isinstance(sha, str) or not sha:
        return _skip(s, record, "a source record without a path and a sha256")
    previous = s.sources.get(path)
    if previous == sha:
        return s
    size = data.get("bytes", -1)
    edit = Edit(
        index=index,
        t=s.t or 0.0,
        path=path,
        sha256=sha,
        previous=previous,
        role=_str(data, "role"),
        bytes=size if isinstance(size, int) and not isinstance(size, bool) else -1,
    )
    return replace(s, edits=(*s.edits, edit), sources=_frozen({**s.sources, path: sha}))


def _cancel_error(result: LadderResult) -> RungResult | None:
    return next(
        (r for r in result.rungs if r.status is Status.FAILED and r.error is not None and r.error.type == CANCELLED),
        None,
    )


def version_run(result: LadderResult, *, index: int, line: int, t: float, run_id: int) -> VersionRun:
    """A ``VersionRun`` of ``result`` (its verdict, speedups and timings); ``index``, ``line``, ``t`` and
    ``run_id`` say where it was recorded.

    Raises:
        AttributeError, TypeError, ValueError: ``result`` is not a well-formed ``LadderResult`` (``step`` catches
            them and skips the record).
    """
    corr = result.rung("correctness")
    correct = None if corr is None or corr.status is Status.SKIPPED else corr.status is Status.OK
    speedup = result.worst_speedup
    if speedup is not None and not isinstance(speedup, (int, float)):
        raise TypeError(f"speedup {speedup!r} is not a number")
    bench = result.rung("benchmark")
    timings: list[SpecTiming] = []
    if bench is not None and bench.status is Status.OK:
        for spec in bench.figures.get("specs", []) or []:
            if isinstance(spec, dict):
                timings.append(
                    SpecTiming(
                        label=str(spec.get("label", "")),
                        median_us=_num(spec.get("median_us")),
                        ref_median_us=_num(spec.get("ref_median_us")),
                        speedup=_num(spec.get("speedup")),
                    )
                )
    return VersionRun(
        index=index,
        line=line,
        t=t,
        key=result.key,
        run_id=run_id,
        result=result,
        verdict=report.verdict(result)[0],
        ok=result.ok,
        correct=correct,
        speedup=speedup,
        verified_speedup=speedup if correct else None,
        seconds=float(result.seconds),
        source_sha256=str(result.source_sha256),
        device=device_label(result.device if isinstance(result.device, dict) else {}),
        timings=tuple(timings),
    )


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _event(s: ReplayState, record: Record, ev: Event, index: int) -> ReplayState:
    if isinstance(ev, LadderFinished):
        res = ev.result
        if not isinstance(res, LadderResult) or not isinstance(ev.key, str):
            return _skip(s, record, "a ladder result that is not one")
        live = {k: v for k, v in s.live.items() if k != ev.key}
        cancelled = _cancel_error(res)
        if cancelled is not None:
            reason = cancelled.error.message if cancelled.error else ""
            c = Cancel(
                index=index, t=s.t or 0.0, key=ev.key, run_id=_int(ev.run_id), rung=cancelled.name, reason=reason
            )
            return replace(s, cancels=(*s.cancels, c), live=_frozen(live))
        run = version_run(res, index=index, line=_line(record), t=s.t or 0.0, run_id=_int(ev.run_id))
        key = res.key
        history = {**s.history, key: (*s.history.get(key, ()), run)}
        return replace(
            s,
            runs=(*s.runs, run),
            history=_frozen(history),
            results=_frozen({**s.results, key: res}),
            live=_frozen(live),
        )
    if isinstance(ev, LadderStarted):
        lr = LiveRun(run_id=_int(ev.run_id), rungs=tuple(str(x) for x in ev.rungs or ()), rung=None)
        return replace(s, live=_frozen({**s.live, str(ev.key): lr}))
    if isinstance(ev, (RungStarted, RungFinished, FirstVerdict)):
        cur = s.live.get(str(ev.key))
        if cur is None:
            cur = LiveRun(run_id=_int(ev.run_id), rungs=(), rung=None)
        if isinstance(ev, RungStarted):
            cur = replace(cur, rung=str(ev.rung))
        elif isinstance(ev, RungFinished):
            if not isinstance(ev.result, RungResult):
                return _skip(s, record, "a rung result that is not one")
            cur = replace(cur, rung=None, finished=(*cur.finished, ev.result))
        else:
            if not isinstance(ev.result, RungResult):
                return _skip(s, record, "a first verdict that is not a rung result")
            cur = replace(cur, first_verdict=ev.result)
        return replace(s, live=_frozen({**s.live, str(ev.key): cur}))
    if isinstance(ev, QueueChanged):
        return replace(s, queue=ev)
    if isinstance(ev, ChatDelta):
        return replace(s, streaming=s.streaming + str(ev.text))
    if isinstance(ev, ChatReplyReset):
        return replace(s, streaming="")
    if isinstance(ev, ChatReplyDone):
        cost = _num(ev.cost_usd)
        return replace(
            s,
            streaming="",
            chat=(*s.chat, ChatEntry(index, index, ev)),
            prompt_tokens=s.prompt_tokens + _int(ev.prompt_tokens),
            completion_tokens=s.completion_tokens + _int(ev.completion_tokens),
            session_tokens=_int(ev.session_tokens),
            cost_usd=s.cost_usd if cost is None else (s.cost_usd or 0.0) + cost,
            session_cost_usd=_num(ev.session_cost_usd),
        )
    if isinstance(ev, ToolCall):
        since = s.resumes[-1] if s.resumes else -1
        for i, entry in enumerate(s.chat):
            old = entry.event
            if isinstance(old, ToolCall) and old.call_id == ev.call_id and ev.call_id and entry.index > since:
                kept = ev if ev.summary or not old.summary else replace(ev, summary=old.summary)
                chat = (*s.chat[:i], ChatEntry(entry.index, index, kept), *s.chat[i + 1 :])
                return replace(s, chat=chat)
        return replace(s, chat=(*s.chat, ChatEntry(index, index, ev)))
    if isinstance(ev, (ChatMessage, ApprovalRequest, ApprovalDecided, AgentNotice)):
        return replace(s, chat=(*s.chat, ChatEntry(index, index, ev)))
    if isinstance(ev, Notice):
        return replace(s, notices=(*s.notices, ev))
    if isinstance(ev, WorkerState):
        return replace(s, workers=_frozen({**s.workers, str(ev.role): ev}))
    if isinstance(ev, AgentState):
        named = ev.state == "thinking" and isinstance(ev.detail, str) and ev.detail and not s.model
        return replace(s, agent=ev, model=ev.detail if named else s.model)
    return s


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return 0
    return int(v)


# -- navigation ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timeline:
    """Where things are in a list of records, for next/previous navigation. Every index is a position in the
    records (the state right after record ``i`` is ``fold(records[:i+1])``), in increasing order.

    Attributes:
        results: the ``LadderFinished`` records that are verdicts (cancelled runs not included).
        messages: the chat's ``ChatMessage`` and ``ChatReplyDone`` records.
        edits: the ``source`` records that changed a file (``Edit``).
        cancels: the cancelled runs.
        versions: every run in order, with its verdict and speedups.
    """

    results: tuple[int, ...] = ()
    messages: tuple[int, ...] = ()
    edits: tuple[int, ...] = ()
    cancels: tuple[int, ...] = ()
    versions: tuple[VersionRun, ...] = ()

    def next(self, kind: str, index: int) -> int | None:
        """The first index of ``kind`` (``results``, ``messages``, ``edits``, ``cancels``) after ``index``, or None.

        Raises:
            ValueError: an unknown ``kind``.
        """
        return next((i for i in self._of(kind) if i > index), None)

    def previous(self, kind: str, index: int) -> int | None:
        """The last index of ``kind`` before ``index``, or None.

        Raises:
            ValueError: an unknown ``kind``.
        """
        return next((i for i in reversed(self._of(kind)) if i < index), None)

    def _of(self, kind: str) -> tuple[int, ...]:
        if kind not in ("results", "messages", "edits", "cancels"):
            raise ValueError(f"unknown timeline kind {kind!r}: results, messages, edits or cancels")
        value: tuple[int, ...] = getattr(self, kind)
        return value


def timeline(records: Sequence[Record]) -> Timeline:
    """The ``Timeline`` of ``records`` (one fold). Never raises."""
    s = fold(records)
    messages = tuple(sorted({e.index for e in s.chat if isinstance(e.event, (ChatMessage, ChatReplyDone))}))
    return Timeline(
        results=tuple(r.index for r in s.runs),
        messages=messages,
        edits=tuple(e.index for e in s.edits),
        cancels=tuple(c.index for c in s.cancels),
        versions=s.runs,
    )
