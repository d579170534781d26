"""Resuming a recorded session: ``ktui --resume SESSION`` and ``ktui agent --resume SESSION``.

``prepare(root, arg)`` finds the session as ``ktui replay`` does (``catalog.find_session``: an id, a unique
prefix of one, or a session folder), reads its log (``log.read_log``, which never raises) and checks that it can
be continued here; the ``ResumePlan`` it returns holds what the front end needs:

- ``history``: the chat as the live agent kept it (``history_of``), to give back to the model; the agent trims it
  to its context window as it trims any history (``ktui.agent.agent.trim``, on every turn);
- ``versions``: every source the session recorded (kernels and references, by SHA-256 in ``blobs/``) that is
  missing from the workspace or differs from it (``check_versions``). Nothing is written to the workspace: a file
  changed since keeps its content, and the report says what differs and where the session's content is;
- ``warnings``: what reading the log found (a corrupt line, a truncated last line): the session resumes from the
  last good event.

New events go to the same ``events.jsonl``: ``ktui.sessions.record.Recorder`` with ``resume_dir`` writes a
``resumed`` record and numbers on from the last ``seq`` (``ktui.sessions.log`` describes the record; the fold
treats an ``end`` before it as the end of the earlier run, not of the session).

Errors (``catalog.SessionError``, a usage error for the CLI): no such session; a prefix that matches several; a
log with no readable record; a session recorded in another workspace; a session that another ktui process is
recording into now (it holds the log's lock).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ktui.agent.events import ChatMessage, ChatReplyDone, ModelToolCall, ToolCall, ToolResult
from ktui.core.store import sha256
from ktui.sessions.catalog import SESSIONS, SessionError, find_session, iso
from ktui.sessions.fold import ReplayState, decode, fold
from ktui.sessions.log import BLOBS, LOG_NAME, LogRead, Record, read_log
from ktui.sessions.record import log_in_use

NO_RESULT = "(no result: the session stopped before this tool call finished)"
"""The ``tool`` message given back for a call whose result the log does not hold (the earlier run was killed
while the tool ran): the model's API refuses a tool call without its result."""


# -- the chat history ----------------------------------------------------------------------------------------------
def history_of(records: Iterable[Record]) -> list[dict[str, Any]]:
    """The agent's history (OpenAI chat messages, without the system prompt) as the live agent had it after
    ``records``, rebuilt from the recorded events. Never raises; a record that does not decode is left out.

    - ``ChatMessage`` of the human (``user``) or of ladder results sent back (``results``): ``{"role": "user",
      "content": text}``;
    - ``ChatReplyDone``: ``{"role": "assistant", "content": text}``; the ``ModelToolCall`` records after it add
      its ``tool_calls`` (``{"id", "type": "function", "function": {"name", "arguments"}}``, the raw arguments);
    - ``ToolResult``: ``{"role": "tool", "tool_call_id", "content"}``; a call without a result (the run was
      killed while it ran) gets ``NO_RESULT``, so that every call keeps its result;
    - a log of a ktui that did not record ``ModelToolCall`` (older than resuming): each ``ToolCall`` that ended
      (``done``, ``error``) becomes a line ``[tool name(summary): state detail]`` in the reply before it, since
      its arguments and result were not kept whole.

    Texts are as recorded: a secret's value is ``[redacted NAME]`` (``ktui.sessions.record``).
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # the calls of the last reply still without a result
    called: set[str] = set()  # the calls recorded whole (ModelToolCall) since the run began

    def settle() -> None:
        out.extend({"role": "tool", "tool_call_id": cid, "content": NO_RESULT} for cid in pending)
        pending.clear()

    for r in records:
        if r.type in ("resumed", "session"):
            settle()
            called.clear()
            continue
        ev = decode(r)
        if isinstance(ev, ChatMessage) and ev.role in ("user", "results"):
            settle()
            out.append({"role": "user", "content": ev.text})
        elif isinstance(ev, ChatReplyDone):
            settle()
            out.append({"role": "assistant", "content": ev.text})
        elif isinstance(ev, ModelToolCall):
            if not out or out[-1]["role"] != "assistant":  # (the calls follow their reply: else a reply lost)
                settle()
                out.append({"role": "assistant", "content": ""})
            call = {"id": ev.call_id, "type": "function", "function": {"name": ev.name, "arguments": ev.arguments}}
            out[-1].setdefault("tool_calls", []).append(call)
            pending.append(ev.call_id)
            called.add(ev.call_id)
        elif isinstance(ev, ToolResult):
            if ev.call_id in pending:
                # (in the order the calls were made: results of earlier calls that never came go first)
                while pending and pending[0] != ev.call_id:
                    out.append({"role": "tool", "tool_call_id": pending.pop(0), "content": NO_RESULT})
                pending.pop(0)
                out.append({"role": "tool", "tool_call_id": ev.call_id, "content": ev.content})
        elif isinstance(ev, ToolCall) and ev.call_id not in called and ev.state != "running":
            note = f"[tool {ev.name}({ev.summary}): {ev.state}{' ' + ev.detail if ev.detail else ''}]"
            if out and out[-1]["role"] == "assistant" and "tool_calls" not in out[-1]:
                text = out[-1]["content"]
                out[-1]["content"] = f"{text}\n{note}" if text else note
            else:
                settle()
                out.append({"role": "assistant", "content": note})
    settle()
    return out


# -- the versions --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VersionCheck:
    """A source the session recorded that the workspace does not hold as recorded.

    Attributes:
        path: relative to the workspace (``kernels/softmax/v3.py``).
        role: ``kernel`` or ``reference`` (as recorded).
        status: ``missing`` (no such file in the workspace) or ``differs`` (its content is not the recorded one).
        sha256: the hash of the content the session recorded last for this path (the file's own hash, also for a
            source kept redacted).
        blob: where that content is, relative to the workspace (``sessions/<id>/blobs/<sha256>``).
        redacted: the blob is kept redacted (it held a secret's value): not byte for byte the file.
        workspace_sha256: the hash of the workspace's file (None when missing).
        added, removed: lines the workspace's file has that the recorded content has not, and the other way.
    """

    path: str
    role: str
    status: Literal["missing", "differs"]
    sha256: str
    blob: str
    redacted: bool = False
    workspace_sha256: str | None = None
    added: int = 0
    removed: int = 0

    def line(self) -> str:
        """One line for the user, e.g. ``kernels/softmax/v2.py differs from the session's last recorded version
        (+3 -1 lines): the workspace's content is kept; the session's is sessions/<id>/blobs/ab12...``."""
        kept = " (kept redacted: a secret's value is not in it)" if self.redacted else ""
        if self.status == "missing":
            return (
                f"{self.path}: missing from the workspace; the session's last {self.role} source is {self.blob}"
                f"{kept} (`cp {self.blob} {self.path}` brings it back)"
            )
        return (
            f"{self.path} differs from the session's last recorded {self.role} source (+{self.added} -{self.removed}"
            f" lines since): the workspace's content is kept; the session's is {self.blob}{kept}"
        )


def check_versions(root: Path, folder: Path, records: Iterable[Record]) -> tuple[list[VersionCheck], int]:
    """Compare the last recorded content of every source path of the session (``source`` records; the session
    folder ``folder``'s ``blobs/``) with the workspace at ``root``. Reads files, writes nothing; never raises.

    Returns:
        (the paths that are missing or differ, in the order first recorded; how many paths were compared). A path
        that leads outside the workspace (a log made by hand) is not compared.
    """
    last: dict[str, dict[str, Any]] = {}
    for r in records:
        p = r.data.get("path")
        if r.type == "source" and isinstance(p, str) and p and isinstance(r.data.get("sha256"), str):
            last[p] = r.data
    out: list[VersionCheck] = []
    compared = 0
    root = root.resolve()
    for rel, data in last.items():
        target = (root / rel).resolve()
        if not target.is_relative_to(root) or target == root:
            continue
        compared += 1
        blob_sha: str = data["sha256"]
        original = data.get("original_sha256")
        own = original if isinstance(original, str) else blob_sha
        blob = folder / BLOBS / blob_sha
        shown = str(blob.relative_to(root)) if blob.resolve().is_relative_to(root) else str(blob)
        role = data.get("role")
        role = role if isinstance(role, str) else "source"
        redacted = own != blob_sha
        try:
            now = target.read_bytes()
        except OSError:
            out.append(VersionCheck(rel, role, "missing", own, shown, redacted))
            continue
        mine = sha256(now)
        if mine == own:
            continue
        added = removed = 0
        try:
            recorded = blob.read_bytes().decode("utf-8", "replace").splitlines()
            for line in difflib.unified_diff(recorded, now.decode("utf-8", "replace").splitlines(), lineterm="", n=0):
                if line.startswith("+") and not line.startswith("+++"):
                    added += 1
                elif line.startswith("-") and not line.startswith("---"):
                    removed += 1
        except OSError:
            pass  # (the blob is gone: the hashes still say that it differs)
        out.append(VersionCheck(rel, role, "differs", own, shown, redacted, mine, added, removed))
    return out, compared


AGENT_VALUED = ("-m", "--message", "--model", "--max-rounds", "--workspace", "--device", "--resume")
"""``ktui agent``'s options that take a value (``ktui.cli.agent_parser``): the word after one is not PROBLEM."""


def agent_problem(argv: Any) -> str | None:
    """The PROBLEM of a recorded ``ktui agent`` command line (``["ktui", "agent", "softmax", "-m", ...]``): its
    first word that is neither an option nor an option's value; None when it has none."""
    if not isinstance(argv, list) or argv[:2] != ["ktui", "agent"]:
        return None
    words = [str(w) for w in argv[2:]]
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w in AGENT_VALUED:
            skip = True
        elif not w.startswith("-"):
            return w
    return None


# -- the plan ------------------------------------------------------------------------------------------------------
@dataclass
class ResumePlan:
    """What ``prepare`` found: the session to continue and what to tell the user.

    Attributes:
        id: the session's id (its folder's name).
        folder: the session's folder (``Recorder``'s ``resume_dir``).
        log: the log as read.
        state: the fold of every record read.
        history: the chat for the model (``history_of``).
        versions: the recorded sources missing from the workspace or different there (``check_versions``).
        compared: how many recorded source paths were compared.
        warnings: problems reading the log, one line each.
    """

    id: str
    folder: Path
    log: LogRead
    state: ReplayState
    history: list[dict[str, Any]]
    versions: list[VersionCheck] = field(default_factory=list)
    compared: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def problem(self) -> str | None:
        """The problem the session worked on last (``ktui agent --resume`` without PROBLEM): the latest of a
        ladder run's, a kernel source's, or the PROBLEM of a ``ktui agent`` command that started or resumed it;
        None when there is none."""
        for r in reversed(self.log.records):
            if r.type == "LadderFinished" and isinstance(r.data.get("key"), str) and "/" in r.data["key"]:
                return str(r.data["key"]).split("/", 1)[0]
            path = r.data.get("path") if r.type == "source" else None
            if isinstance(path, str) and len(parts := path.split("/")) == 3 and parts[0] == "kernels":
                return parts[1]
            if r.type in ("session", "resumed") and r.data.get("command") == "agent":
                found = agent_problem(r.data.get("argv"))
                if found:
                    return found
        return None

    def apply(self, agent: Any) -> None:
        """Give ``agent`` (a ``ktui.agent.agent.Agent``) the session's chat history and its token and cost
        figures so far, so that its next message continues the conversation."""
        agent.history = [dict(m) for m in self.history]
        agent.session_tokens = self.state.session_tokens
        agent.session_cost = self.state.cost

    def lines(self) -> list[str]:
        """What to tell the user before the session goes on: which session, how its last run ended, the log's
        problems, and every source that is missing or differs (or that all match)."""
        s = self.state
        start = iso(s.meta.get("started")) if s.meta and isinstance(s.meta.get("started"), (int, float)) else None
        n = len(self.history)
        out = [
            f"resuming session {self.id}" + (f" (started {start})" if start else "") + f": {len(self.log.records)} "
            f"records, {n} message{'s' if n != 1 else ''} go back to the model"
        ]
        out.append(f"its last run ended: {s.end_reason}" if s.ended else "its last run was cut short (no end line)")
        out.extend(self.warnings)
        if self.versions:
            out.extend(v.line() for v in self.versions)
        elif self.compared:
            out.append(f"every recorded source matches the workspace ({self.compared} files)")
        return out


def prepare(root: Path, arg: str) -> ResumePlan:
    """The session ``arg`` names in the workspace at ``root``, read and checked for resuming.

    Args:
        root: the workspace's folder.
        arg: a session id, a unique prefix of one, or a session folder (as ``ktui replay`` takes it).

    Raises:
        SessionError: no such session; the prefix matches several; its log holds no readable record; it was
            recorded in another workspace; another ktui process records into it now.
    """
    root = root.resolve()
    folder = find_session(root, arg).resolve()
    path = folder / LOG_NAME
    log = read_log(path)
    if not log.records:
        why = "; ".join(str(p) for p in log.problems[:3]) or "it is empty"
        raise SessionError(f"cannot resume {folder.name}: {path} holds no readable record ({why})")
    recorded = log.meta.get("workspace") if log.meta else None
    warnings: list[str] = []
    if isinstance(recorded, str) and recorded:
        if Path(recorded).resolve() != root:
            raise SessionError(
                f"session {folder.name} was recorded in the workspace {recorded}, not in {root}: resume it there "
                f"(`ktui {recorded} --resume {folder.name}`)"
            )
    elif folder.parent == root / SESSIONS:
        warnings.append(
            f"the log's metadata is unreadable: its workspace is taken to be {root}, whose sessions/ holds it"
        )
    else:
        raise SessionError(
            f"cannot resume {folder.name}: the log's metadata (its first line) is unreadable, so its workspace is "
            f"unknown, and the session is not in {root / SESSIONS}"
        )
    if log_in_use(path):
        raise SessionError(
            f"session {folder.name} is being recorded by another ktui process now (it holds {path}'s lock): "
            "resume it once that process has exited"
        )
    if log.problems:
        good = log.records[-1]
        where = ", ".join(str(p) for p in log.problems[:5]) + (", ..." if len(log.problems) > 5 else "")
        warnings.append(
            f"the log is damaged ({where}): the session resumes from its last good event (seq {good.seq}, line "
            f"{good.line}); the damaged lines stay as they are"
        )
    state = fold(log.records)
    versions, compared = check_versions(root, folder, log.records)
    return ResumePlan(
        id=folder.name,
        folder=folder,
        log=log,
        state=state,
        history=history_of(log.records),
        versions=versions,
        compared=compared,
        warnings=warnings,
    )


def chat_entries(plan: ResumePlan) -> Sequence[Any]:
    """The earlier chat, as the replay shows it: the events of ``plan.state.chat`` (``ChatMessage``,
    ``ChatReplyDone``, ``ToolCall`` in its last state, approvals and notices), in order."""
    return [e.event for e in plan.state.chat]
