"""The session log: ``sessions/<id>/events.jsonl``, one JSON object a line, and the reader that never raises.

Each line is an envelope (``Record``)::

    {"v": 1, "seq": 7, "t": 1796152007.93, "type": "LadderFinished", "data": {...}}

``v`` is ``SCHEMA_VERSION``; ``seq`` counts from 0 with no gap; ``t`` is when it happened (``time.time()``,
seconds since the epoch); ``type`` is an event kind (``ktui.core.events.Event.kind``: its ``to_json()`` less the
``"event"`` key is ``data``) or one of the log's own types:

- ``session`` (always ``seq`` 0): the metadata (``SessionMeta``'s fields);
- ``source``: a file's exact content as a run or an edit saw it, kept by SHA-256 in ``blobs/`` beside the log
  (``data``: ``path`` relative to the workspace, ``sha256``, ``bytes``, ``role``: ``kernel`` or ``reference``;
  ``blobs/<sha256>`` always holds bytes of that hash. A source that held a secret's value is kept redacted: then
  ``sha256`` is the redacted bytes' hash, ``original_sha256`` the file's own and ``redacted`` the variables' names);
- ``artifact``: a large file a run made (the ``dumps`` rung's PTX, cubin, SASS...; the ``profile`` rung's
  ``.ncu-rep`` and its CSV pages), referenced by SHA-256 (``data``: ``path`` relative to the workspace,
  ``sha256``, ``bytes``, ``rung``, ``stored``: whether ``blobs/<sha256>`` holds its bytes, which it does up to
  ``ktui.sessions.record.ARTIFACT_BLOB_MAX`` bytes a file), written just before the ``LadderFinished`` that
  names it, once per path and content;
- ``device``: the device as the candidate worker reported it in its hello (``data``: ``SessionMeta.device``'s
  keys), written when it was not known yet at the start (the metadata's ``device`` is then None) or changed;
- ``end``: a clean end (``data``: ``reason``). A log without one was cut short (a crash, a SIGKILL).
- ``resumed``: ``ktui --resume`` (``ktui.sessions.resume``) continued the session in this log: the same fields as
  the metadata for the run that resumes it (``started``, ``pid``, ``argv``, ``command``, ``device``, ``model``...),
  plus ``after_seq`` (the last sequence number before it) and ``previous_end`` (the earlier run's ``end`` reason,
  None when it was cut short). Its ``seq`` follows the last record's: numbering goes on without a gap, and an
  ``end`` before it closed the earlier run, not the session (the session has ended when an ``end`` follows the
  last ``resumed``).

The writer (``ktui.sessions.record``) appends one line per event and flushes and fsyncs it, so a crash leaves
every complete line and at most one partial last line. ``read_log`` reads any file at all: a partial last line is
skipped with a warning, a corrupt line anywhere else is reported with its line number and the rest still reads,
records out of order are reported and kept in file order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

SCHEMA_VERSION = 1
LOG_NAME = "events.jsonl"
BLOBS = "blobs"
LOG_TYPES = ("session", "source", "device", "end", "resumed")
SESSION_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")
"""A session's id: ``YYYYMMDD-HHMMSS-xxxx`` (UTC start, 4 random hex digits): sorts by start time."""


class SessionMeta(TypedDict):
    """The ``session`` record's data (``seq`` 0), as ``ktui.sessions.record.Recorder`` writes it.

    Attributes:
        id: the session's id (``SESSION_ID``), also its folder's name.
        started: when it started, seconds since the epoch.
        ktui_version: ``ktui.__version__``.
        ktui_commit: ``git rev-parse HEAD`` of the checkout ktui runs from, None when it is not one.
        workspace: the workspace's absolute path.
        workspace_commit: ``git rev-parse HEAD`` in the workspace, None when it is not in a git checkout.
        command: ``tui``, ``run`` or ``agent``.
        argv: the command line (``["ktui", "run", ...]``), secrets redacted like every line.
        device_type: where kernels run: ``cpu`` or ``cuda`` (the resolved ``--device``).
        device: the candidate worker's hello ``device`` (``type``, ``name``, ``torch``, ``triton``, ``interpreter``;
            on a GPU ``capability``, ``sm_count``, ``memory_gib``), None when not known yet: a ``device`` record
            follows once it is.
        model: the chat's litellm model name, None without one.
        env: the *names* (never the values) of the environment variables that configure ktui, the model or the
            device (``KTUI_*``, ``*_API_KEY``, ``*_API_BASE``, ``OPENAI_*``, ``ANTHROPIC_*``, ``TRITON_*``...), sorted.
        python: the Python version of ktui's own process.
        pid: ktui's process id.
    """

    id: str
    started: float
    ktui_version: str
    ktui_commit: str | None
    workspace: str
    workspace_commit: str | None
    command: str
    argv: list[str]
    device_type: str
    device: dict[str, Any] | None
    model: str | None
    env: list[str]
    python: str
    pid: int


ProblemKind = Literal["unreadable", "truncated", "corrupt", "schema", "order"]


@dataclass(frozen=True)
class Record:
    """One line of the log, as read.

    Attributes:
        line: its line number in the file (from 1).
        seq: the writer's sequence number.
        t: seconds since the epoch.
        type: an event kind or one of ``LOG_TYPES``.
        data: the payload (JSON).
    """

    line: int
    seq: int
    t: float
    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class LogProblem:
    """Something wrong in a log: ``kind`` (``unreadable`` file, ``truncated`` last line, ``corrupt`` line,
    ``schema`` version unknown, ``order``: a sequence number out of place), the line (0 for the whole file)."""

    kind: ProblemKind
    line: int
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}"


@dataclass
class LogRead:
    """What ``read_log`` found: the metadata (the ``session`` record's data, None when the first line is not one),
    every readable record in file order (the ``session`` record included), and the problems."""

    path: Path
    meta: dict[str, Any] | None = None
    records: list[Record] = field(default_factory=list)
    problems: list[LogProblem] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        """The session closed cleanly: an ``end`` record comes after the last ``resumed`` one (an ``end`` before a
        resumption closed the earlier run only)."""
        for r in reversed(self.records):
            if r.type in ("end", "resumed"):
                return r.type == "end"
        return False


def envelope(seq: int, t: float, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    """The JSON object one line of the log holds."""
    return {"v": SCHEMA_VERSION, "seq": seq, "t": t, "type": type_, "data": data}


def _record(obj: Any, line: int) -> Record | str:
    """The record in ``obj`` (a parsed line), or why it is not one."""
    if not isinstance(obj, dict):
        return f"not a JSON object but {type(obj).__name__}"
    missing = [k for k in ("v", "seq", "t", "type", "data") if k not in obj]
    if missing:
        return f"missing {', '.join(missing)}"
    v, seq, t, type_, data = obj["v"], obj["seq"], obj["t"], obj["type"], obj["data"]
    if not isinstance(v, int) or isinstance(v, bool):
        return f"schema version {v!r} is not an integer"
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        return f"sequence number {seq!r} is not a non-negative integer"
    if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t:
        return f"timestamp {t!r} is not a number"
    if not isinstance(type_, str) or not type_:
        return f"type {type_!r} is not a name"
    if not isinstance(data, dict):
        return f"data is {type(data).__name__}, not an object"
    return Record(line=line, seq=seq, t=float(t), type=type_, data=data)


def read_log(path: str | Path) -> LogRead:
    """Every record of the log at ``path`` (a file, or a session folder holding ``events.jsonl``), never raising:
    an unreadable file is one ``unreadable`` problem; undecodable bytes are replaced; a last line that does not
    parse (no newline after it: the writer was killed mid-line) is ``truncated``; any other line that does not
    parse, or parses to something that is not a record, is ``corrupt`` (its line number given) and skipped; a
    record of another schema version is ``schema`` and skipped; a sequence number that does not follow the one
    before is ``order`` (the record is kept, in file order)."""
    p = Path(path)
    if p.is_dir():
        p = p / LOG_NAME
    out = LogRead(path=p)
    try:
        raw = p.read_bytes()
    except (OSError, ValueError) as exc:
        out.problems.append(LogProblem("unreadable", 0, f"cannot read {p}: {exc}"))
        return out
    text = raw.decode("utf-8", errors="replace")
    lines = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        lines = lines[:-1]
    last_seq: int | None = None
    for i, body in enumerate(lines, start=1):
        if not body.strip():
            continue
        partial = i == len(lines) and not complete
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError) as exc:
            if partial:
                out.problems.append(LogProblem("truncated", i, "the last line is incomplete (skipped): cut short"))
            else:
                out.problems.append(LogProblem("corrupt", i, f"not JSON ({str(exc)[:80]}); skipped"))
            continue
        rec = _record(obj, i)
        if isinstance(rec, str):
            out.problems.append(LogProblem("corrupt", i, f"not a log record: {rec}; skipped"))
            continue
        if obj["v"] != SCHEMA_VERSION:
            out.problems.append(
                LogProblem("schema", i, f"schema version {obj['v']} (this ktui reads {SCHEMA_VERSION}); skipped")
            )
            continue
        if last_seq is not None and rec.seq != last_seq + 1:
            out.problems.append(LogProblem("order", i, f"sequence number {rec.seq} after {last_seq}"))
        last_seq = rec.seq if last_seq is None else max(last_seq, rec.seq)
        if rec.type == "session" and out.meta is None and not out.records:
            out.meta = rec.data
        out.records.append(rec)
    if out.meta is None and not any(p_.kind == "unreadable" for p_ in out.problems):
        out.problems.append(LogProblem("corrupt", 1, "no session record on the first line: metadata unknown"))
    return out
