"""The recorded sessions of a workspace: ``ktui sessions``, and finding one session by id, prefix or path.

A session is a folder ``sessions/<id>/`` holding ``events.jsonl`` (``ktui.sessions.log``). ``catalog(root)`` reads
each log (``read_log``, which never raises), folds it (``ktui.sessions.fold``) and gives one ``SessionRow`` per
session, oldest first (ids sort by start time). ``find_session(root, arg)`` resolves what a user typed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ktui.core import envelope
from ktui.core.report import cost as fmt_cost
from ktui.core.results import device_label
from ktui.sessions.fold import ReplayState, fold
from ktui.sessions.log import LOG_NAME, LogRead, read_log

SESSIONS = "sessions"
"""The folder of a workspace that holds the recorded sessions."""


class SessionError(ValueError):
    """A session that cannot be found or read as asked (the CLI prints it as a usage error, exit code 2)."""


@dataclass(frozen=True)
class Session:
    """One session read and folded: its folder, what ``read_log`` found, and the state after every record."""

    id: str
    path: Path
    log: LogRead
    state: ReplayState

    @property
    def blobs(self) -> Path:
        """``sessions/<id>/blobs``: the recorded sources by SHA-256."""
        return self.path / "blobs"


def load(path: Path) -> Session:
    """The session in folder ``path`` (or of the log file ``path``), read and folded. Never raises: an unreadable
    log is a session with no records and one problem."""
    folder, file = (path.parent, path) if path.is_file() else (path, path / LOG_NAME)
    log = read_log(file)
    return Session(id=folder.name, path=folder, log=log, state=fold(log.records))


class BestJson(TypedDict):
    """The version with the highest verified speedup (its correctness passed) and that speedup."""

    key: str
    speedup: float | None


class SessionJson(TypedDict):
    """One recorded session.

    Attributes:
        id: the session's folder name (``YYYYMMDD-HHMMSS-xxxx``).
        start: when it started, seconds since the epoch (null for a log with no record).
        start_iso: the same as ISO 8601 UTC (``2026-12-01T19:57:54Z``).
        duration_s: from the first record to the last, s.
        ended: the log has its ``end`` record (false: cut short by a crash, or still running).
        running: no end record and the process writing it is alive on this machine: still open, not cut short.
        problems: the problems that had a ladder run, in order of their first run.
        versions: how many distinct ``problem/version`` had a (not cancelled) run.
        runs: how many runs finished.
        best: the best verified version, null when none had a speedup.
        verified: how many distinct versions had a run whose correctness passed.
        device: the device's name.
        model: the model's name ('' when none was configured).
        cost_usd: the replies' summed cost, null when none was priced.
        log_problems: problems found reading the log (corrupt, truncated lines...) and records the fold skipped.
    """

    id: str
    start: float | None
    start_iso: str | None
    duration_s: float
    ended: bool
    running: bool
    problems: list[str]
    versions: int
    runs: int
    best: BestJson | None
    verified: int
    device: str
    model: str
    cost_usd: float | None
    log_problems: int


class SessionsJson(TypedDict):
    """The recorded sessions of a workspace, oldest first (``ktui sessions --json``'s data).

    Attributes:
        workspace: the workspace's folder (absolute).
        sessions: one per folder under ``sessions/``.
    """

    workspace: str
    sessions: list[SessionJson]


@dataclass(frozen=True)
class SessionRow:
    """One line of ``ktui sessions``.

    Attributes:
        id: the session's folder name (``YYYYMMDD-HHMMSS-xxxx``).
        start: when it started, seconds since the epoch (the metadata's ``started``, else the first record's
            time; None for a log with no record).
        duration_s: from the first record to the last, seconds.
        ended: the log has an ``end`` record (False: cut short by a crash, or still running).
        running: no ``end`` record, and the process that wrote its last ``session`` or ``resumed`` record is alive on
            this machine (``recording_alive``): a session still open, not one cut short (new-user trial 21 F17).
        problems: the problems that had a ladder run, in order of their first run.
        versions: how many distinct ``problem/version`` had a (not cancelled) run.
        runs: how many runs finished.
        best_key, best_speedup: the version with the highest verified speedup (its correctness passed) and that
            speedup; None when no version had one.
        verified: how many distinct versions had a run whose correctness passed (on the CPU, with no times, what
            tells a session with a verified version from one without: new-user trial 20 L13).
        device: the device's name (the ``device`` record, the metadata, else the runs' device).
        model: the model's name ("" when no model was configured).
        cost_usd: the sum of the replies' costs, else the last ``session_cost_usd``; None when none was priced.
        log_problems: problems found reading the log (corrupt, truncated lines...) plus records the fold skipped.
    """

    id: str
    start: float | None
    duration_s: float
    ended: bool
    problems: tuple[str, ...]
    versions: int
    runs: int
    best_key: str | None
    best_speedup: float | None
    device: str
    model: str
    cost_usd: float | None
    log_problems: int
    verified: int = 0
    running: bool = False

    def to_json(self) -> SessionJson:
        """The row as ``ktui sessions --json`` writes it (``start`` also as ISO 8601 UTC)."""
        return {
            "id": self.id,
            "start": self.start,
            "start_iso": iso(self.start),
            "duration_s": round(self.duration_s, 3),
            "ended": self.ended,
            "running": self.running,
            "problems": list(self.problems),
            "versions": self.versions,
            "runs": self.runs,
            "best": {"key": self.best_key, "speedup": self.best_speedup} if self.best_key else None,
            "verified": self.verified,
            "device": self.device,
            "model": self.model,
            "cost_usd": self.cost_usd,
            "log_problems": self.log_problems,
        }


def iso(t: float | None) -> str | None:
    """``2026-12-01T19:57:54Z`` for seconds since the epoch, None for None."""
    if t is None:
        return None
    try:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return None


def _meta_str(meta: Any, *keys: str) -> str:
    for k in keys:
        v = meta.get(k) if hasattr(meta, "get") else None
        if isinstance(v, str) and v:
            return v
    return ""


def device_name(state: ReplayState) -> str:
    """The device a session ran on: the ``device`` record's (or the metadata's) GPU name or type, else the label
    of the first run's device (``cpu (interpreter)``), else ""."""
    dev = state.device
    if dev is not None:
        if dev.get("type") == "cpu" or dev.get("interpreter"):
            return device_label(dict(dev))
        name = _meta_str(dev, "name", "gpu", "gpu_name")
        if name:
            return name
        typ = _meta_str(dev, "type")
        if typ:
            return typ
    if state.runs:
        return state.runs[0].device
    return ""


def model_name(state: ReplayState) -> str:
    """The model of a session: the metadata's ``model``, else the one the agent named when it first thought
    (``ReplayState.model``), else ""."""
    if state.meta is not None:
        m = _meta_str(state.meta, "model", "model_name")
        if m:
            return m
    return state.model


def start_of(session: Session) -> float | None:
    """When a session started: the metadata's ``started`` (seconds since the epoch), else its first record's time."""
    meta = session.log.meta or {}
    started = meta.get("started")
    if isinstance(started, (int, float)) and not isinstance(started, bool):
        return float(started)
    return session.log.records[0].t if session.log.records else None


def row(session: Session) -> SessionRow:
    """The ``SessionRow`` of a session read with ``load``."""
    s = session.state
    recs = session.log.records
    start = start_of(session)
    end = recs[-1].t if recs else None
    first = recs[0].t if recs else None
    best = s.best
    running = not session.log.ended and recording_alive(session)
    if running and first is not None:  # the wall time so far, not to its last record (new-user trial 22 F2: "49 s
        end = max(end or first, time.time())  # (running)" for a session 17 minutes into a ladder)
    return SessionRow(
        id=session.id,
        start=start,
        duration_s=max(0.0, end - first) if end is not None and first is not None else 0.0,
        ended=session.log.ended,
        problems=s.problems_seen,
        versions=len(s.history),
        runs=len(s.runs),
        best_key=best.key if best else None,
        best_speedup=best.verified_speedup if best else None,
        device=device_name(s),
        model=model_name(s),
        cost_usd=s.cost,
        log_problems=len(session.log.problems) + s.skipped,
        verified=len({r.key for r in s.runs if r.correct}),
        running=running,
    )


def recording_alive(session: Session) -> bool:
    """Whether the process that wrote the session's last ``session`` or ``resumed`` record (its ``pid``) is alive on
    this machine and is a ktui (Linux: its command line names ktui; elsewhere the pid alone), so the log is still
    being written. False for a log from another machine's process that has ended, or one without a pid."""
    import os

    pid = None
    for rec in reversed(session.log.records):
        if rec.type in ("session", "resumed") and isinstance(rec.data, dict):
            pid = rec.data.get("pid")
            break
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # alive, another user's
    except OSError:
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            return b"ktui" in cmdline.read_bytes()
        except OSError:
            return False
    return True


def session_dirs(root: Path) -> list[Path]:
    """The session folders under ``root/sessions`` (those holding an ``events.jsonl``), sorted by id."""
    base = root / SESSIONS
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and (p / LOG_NAME).is_file())


def catalog(root: Path) -> list[SessionRow]:
    """One ``SessionRow`` per session of the workspace at ``root``, oldest first."""
    return [row(load(p)) for p in session_dirs(root)]


def find_session(root: Path, arg: str) -> Path:
    """The folder of the session ``arg`` names: a path (a session folder, or its ``events.jsonl``), an id under
    ``root/sessions``, or a prefix of exactly one id there.

    Raises:
        SessionError: nothing matches, or the prefix matches several sessions (the message lists them).
    """
    p = Path(arg)
    if p.is_dir() and (p / LOG_NAME).is_file():
        return p
    if p.is_file():
        return p.parent
    dirs = session_dirs(root)
    exact = [d for d in dirs if d.name == arg]
    if exact:
        return exact[0]
    matches = [d for d in dirs if d.name.startswith(arg)] if arg else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(d.name for d in matches[:8]) + (", ..." if len(matches) > 8 else "")
        raise SessionError(f"{arg!r} matches {len(matches)} sessions ({names}): give more of the id")
    where = root / SESSIONS
    known = ", ".join(d.name for d in dirs[-5:]) if dirs else "none"
    raise SessionError(f"no session {arg!r} in {where} (sessions: {known}; or give a session folder)")


def workspace_root(arg: str) -> Path:
    """The folder ``--workspace`` names, resolved; for the default ``.``, the nearest workspace at or above the
    current folder when there is one (new-user trial 25, F4: ``ktui sessions`` from ``kernels/<problem>/`` said
    "No recorded sessions" beside 40).

    Raises:
        SessionError: it is not a folder.
    """
    if arg == ".":
        from ktui.core.workspace import Workspace, WorkspaceError

        try:
            return Workspace.find(".").root
        except WorkspaceError:
            pass
    root = Path(arg).resolve()
    if not root.is_dir():
        raise SessionError(f"no such folder: {arg}")
    return root


# -- ktui sessions -------------------------------------------------------------------------------------------------
def duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``1 h 05 min``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min"
    return f"{seconds // 3600:.0f} h {(seconds % 3600) // 60:02.0f} min"


def table(rows: list[SessionRow]) -> list[str]:
    """``ktui sessions``'s text: a header and one line per session, then a line of totals."""
    if not rows:
        return ["no recorded sessions (ktui records each session in sessions/<id>/)"]
    head = ("ID", "START (UTC)", "DURATION", "PROBLEMS", "VERSIONS", "BEST", "DEVICE", "MODEL", "COST", "LOG")
    body = []
    for r in rows:
        start = iso(r.start)
        best = f"{r.best_speedup:.2f}x {r.best_key}" if r.best_key and r.best_speedup is not None else "-"
        if best == "-" and r.verified:  # verified versions with no times (the CPU): say how many passed
            best = f"{r.verified} verified, no times"
        body.append(
            (
                r.id,
                start.replace("T", " ").rstrip("Z") if start else "-",
                duration(r.duration_s) + ("" if r.ended else " (running)" if r.running else " (cut short)"),
                ",".join(r.problems) or "-",
                str(r.versions),
                best,
                r.device or "-",
                r.model or "-",
                fmt_cost(r.cost_usd) if r.cost_usd is not None else "-",
                f"{r.log_problems} problem{'s' if r.log_problems != 1 else ''}" if r.log_problems else "ok",
            )
        )
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in (head, *body)]
    n = len(rows)
    lines.append(f"{n} session{'s' if n != 1 else ''}")
    return lines


def sessions_parser() -> argparse.ArgumentParser:
    p = envelope.ArgumentParser(
        prog="ktui sessions",
        description="The recorded sessions of a workspace (sessions/<id>/events.jsonl), oldest first: id, start, "
        "duration, problems, versions run, the best verified speedup (from a version whose correctness passed), "
        "device, model, cost, and the problems found reading each log. Runs nothing.",
        epilog="exit codes: 0 ok, 2 usage (no such folder)",
    )
    p.add_argument("--workspace", default=".", help="the workspace (default: the current folder)")
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object, the envelope (`ktui schema sessions`) whose data has workspace, sessions (id, "
        "start, start_iso, duration_s, ended, problems, versions, runs, best {key, speedup}, device, model, "
        "cost_usd, log_problems)",
    )
    return p


def cli(argv: list[str]) -> int:
    """``ktui sessions [--workspace W] [--json]``.

    Raises:
        SessionError: the workspace is not a folder.
    """
    args = sessions_parser().parse_args(argv)
    root = workspace_root(args.workspace)
    rows = catalog(root)
    if args.json:
        data: SessionsJson = {"workspace": str(root), "sessions": [r.to_json() for r in rows]}
        return envelope.emit("sessions", data)
    print("\n".join(table(rows)))
    return 0
