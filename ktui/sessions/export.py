"""``ktui export SESSION --format md|json``: a recorded session as a report a colleague can read, or as data.

Markdown (``markdown(session)``): the session's header (start, duration, device, model, tokens, cost), the best
verified version, every version run in order with its verdict, rungs and benchmark timings and the diff of its
source against the previous source of the same file (from the blobs the recorder kept), the chat condensed (the
human's and the model's messages, one line per tool call, approval and notice) and the problems found reading
the log.

JSON (``trajectory(session)``): an ATIF trajectory (the Agent Trajectory Interchange Format of Harbor /
terminal-bench, RFC 0001, ``ATIF-v1.4``: harbor ``docs/rfcs/0001-trajectory-format.md``), so trajectory viewers
and training pipelines read the chat, with ktui's own record under ``extra.ktui``. Its shape, version
``EXPORT_SCHEMA_VERSION`` (1):

- root: ``schema_version`` (``"ATIF-v1.4"``), ``session_id``, ``agent`` (``name`` ``ktui``, ``version``,
  ``model_name``), ``notes``, ``steps``, ``final_metrics`` (``total_prompt_tokens``, ``total_completion_tokens``,
  ``total_cost_usd``, ``total_steps``), ``extra``;
- steps, numbered from 1 in the order of the log: the human's messages are ``user`` steps; each model reply is an
  ``agent`` step with its ``metrics`` (``prompt_tokens``, ``completion_tokens``, ``cost_usd``), the ``tool_calls``
  that followed it (``tool_call_id``, ``function_name``, ``arguments``: ``{"summary": ...}``, the one line ktui
  records, not the full arguments) and their ``observation`` (``source_call_id``, ``content``: state and detail),
  and the approvals asked and answered in ``extra.approvals``; ladder results sent back to the model, each
  version's verdict, each cancelled run and each agent notice are ``system`` steps (``extra.ktui_kind``:
  ``results``, ``verdict``, ``cancel``, ``notice``; a verdict step's ``extra.version`` indexes
  ``extra.ktui.versions``);
- ``extra.ktui``: ``schema_version`` (``EXPORT_SCHEMA_VERSION``), ``meta`` (the session record), ``device``,
  ``ended``, ``end_reason``, ``versions`` (in order: ``step_id``, ``key``, ``kernel``, ``run_id``, ``timestamp``,
  ``verdict``, ``ok``, ``correct``, ``speedup``, ``verified_speedup``, ``seconds``, ``device``, ``source_sha256``,
  ``timings`` [``label``, ``median_us``, ``ref_median_us``, ``speedup``], ``diff`` {``against``,
  ``against_sha256``, ``text``} or null, ``result``: the whole ``LadderResult`` JSON), ``best`` {``key``,
  ``speedup``, ``version``} or null, ``edits`` (``path``, ``sha256``, ``previous``, ``role``, ``bytes``,
  ``timestamp``), ``cancels``, ``problems`` (what reading the log and its blobs found, each with its line).

A reader checks ``extra.ktui.schema_version``; a later version only adds keys.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktui import __version__
from ktui.agent.events import (
    AgentNotice,
    ApprovalDecided,
    ApprovalRequest,
    ChatMessage,
    ChatReplyDone,
    ToolCall,
)
from ktui.core.envelope import ArgumentParser
from ktui.core.report import cost as fmt_cost
from ktui.core.results import Status, fmt
from ktui.sessions.catalog import (
    Session,
    SessionError,
    device_name,
    find_session,
    iso,
    load,
    model_name,
    start_of,
    workspace_root,
)
from ktui.sessions.catalog import duration as fmt_duration
from ktui.sessions.fold import VersionRun

ATIF_VERSION = "ATIF-v1.4"
"""The ATIF version the JSON export follows (harbor RFC 0001, v1.4)."""
EXPORT_SCHEMA_VERSION = 1
"""The version of ktui's part of the JSON export (``extra.ktui``)."""
MAX_DIFF_LINES = 400
"""A version's diff is cut after this many lines in the Markdown (the JSON keeps it whole)."""


# -- sources and diffs ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VersionDiff:
    """What changed in a run's source: ``against`` (the file it is compared with, relative to the workspace; ""
    for none), its hash, the unified diff (``text``, "" when unchanged or nothing to compare with), and ``note``:
    one line saying what the diff is (``first version``, ``unchanged since run 2``, ``source not recorded``)."""

    against: str
    against_sha256: str
    text: str
    note: str


class Blobs:
    """The recorded sources of a session (``sessions/<id>/blobs/<sha256>``), read once each and checked against
    their hash; ``problems`` collects what was missing or did not match."""

    def __init__(self, session: Session):
        self.dir = session.blobs
        self.cache: dict[str, str | None] = {}
        self.problems: list[str] = []
        # a source the recorder redacted (a secret's value in it) is kept under the redacted content's hash; its
        # record names the original hash, which is the one results carry
        self.alias: dict[str, str] = {}
        for r in session.log.records:
            orig, kept = r.data.get("original_sha256"), r.data.get("sha256")
            if r.type == "source" and isinstance(orig, str) and isinstance(kept, str):
                self.alias[orig] = kept

    def text(self, sha: str) -> str | None:
        """The source with hash ``sha`` (UTF-8, undecodable bytes replaced; for a redacted source its redacted
        content), or None when it was not recorded or does not match its hash."""
        sha = self.alias.get(sha, sha)
        if sha in self.cache:
            return self.cache[sha]
        out: str | None = None
        if sha and all(c in "0123456789abcdef" for c in sha):
            try:
                raw = (self.dir / sha).read_bytes()
            except OSError:
                self.problems.append(f"blob {sha[:12]}: not recorded (no {self.dir.name}/{sha[:12]}...)")
            else:
                if hashlib.sha256(raw).hexdigest() == sha:
                    out = raw.decode("utf-8", errors="replace")
                else:
                    self.problems.append(f"blob {sha[:12]}: its content does not match its hash (not used)")
        self.cache[sha] = out
        return out


def unified(a: str, b: str, name_a: str, name_b: str) -> str:
    """The unified diff (3 lines of context) of text ``a`` to ``b``; "" when they are equal."""
    lines = difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), fromfile=name_a, tofile=name_b
    )
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)


def version_diffs(session: Session, blobs: Blobs) -> list[VersionDiff]:
    """For each run of ``session.state.runs``, in order, its source against the source of the previous run of the
    same file; the first run of a file against the last run of another version of the same problem (the version
    it was most likely derived from); the first run of a problem against nothing."""
    out: list[VersionDiff] = []
    last_of_file: dict[str, tuple[int, VersionRun]] = {}
    last_of_problem: dict[str, tuple[int, VersionRun]] = {}
    for n, run in enumerate(session.state.runs, start=1):
        res = run.result
        path, sha = res.kernel, res.source_sha256
        prev = last_of_file.get(path) or last_of_problem.get(res.problem)
        last_of_file[path] = last_of_problem[res.problem] = (n, run)
        new = blobs.text(sha)
        if prev is None:
            lines = len(new.splitlines()) if new is not None else 0
            note = f"first version: {lines} lines" if new is not None else "first version (source not recorded)"
            out.append(VersionDiff("", "", "", note))
            continue
        pn, prun = prev
        ppath, psha = prun.result.kernel, prun.result.source_sha256
        if psha == sha and ppath == path:
            out.append(VersionDiff(ppath, psha, "", f"source unchanged since run {pn}"))
            continue
        old = blobs.text(psha)
        if new is None or old is None:
            missing = "its source" if new is None else f"the source of run {pn}"
            out.append(VersionDiff(ppath, psha, "", f"no diff: {missing} was not recorded"))
            continue
        text = unified(old, new, f"{ppath}@{psha[:12]}", f"{path}@{sha[:12]}")
        plus = sum(1 for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
        minus = sum(1 for ln in text.splitlines() if ln.startswith("-") and not ln.startswith("---"))
        what = f"against run {pn}" if ppath == path else f"new file, against {ppath} as run in run {pn}"
        note = f"{what}: +{plus} -{minus}" if text else f"{what}: same content"
        out.append(VersionDiff(ppath, psha, text, note))
    return out


# -- Markdown ------------------------------------------------------------------------------------------------------
def _clock(t: float | None) -> str:
    s = iso(t)
    return s[11:19] if s else "?"


def _cell(text: str, limit: int = 160) -> str:
    one = " ".join(str(text).split())
    one = one if len(one) <= limit else one[: limit - 1] + "…"
    return one.replace("|", "\\|")


def _quote(text: str) -> list[str]:
    return [f"> {ln}" if ln else ">" for ln in (text.rstrip().splitlines() or [""])]


def markdown(session: Session) -> str:
    """The session as Markdown (see the module's docstring for what it holds)."""
    s = session.state
    blobs = Blobs(session)
    diffs = version_diffs(session, blobs)
    recs = session.log.records
    start = start_of(session)
    span = (recs[-1].t - recs[0].t) if recs else 0.0
    meta = dict(s.meta or {})
    out = [f"# ktui session {session.id}", ""]
    facts = [
        f"- started: {iso(start) or 'unknown'}, {fmt_duration(max(span, 0.0))}"
        + ("" if session.log.ended else " (no end record: cut short, or still running)"),
        f"- device: {device_name(s) or 'unknown'}",
        f"- model: {model_name(s) or 'none'}",
        f"- tokens: {s.prompt_tokens} in + {s.completion_tokens} out; cost: "
        + (fmt_cost(s.cost) if s.cost is not None else "n/a"),
        f"- ktui {meta.get('ktui_version') or meta.get('version') or '?'}"
        + (f" (commit {str(c)[:12]})" if (c := meta.get("ktui_commit") or meta.get("git_commit")) else ""),
        f"- {len(s.runs)} run{'s' if len(s.runs) != 1 else ''} of {len(s.history)} "
        f"version{'s' if len(s.history) != 1 else ''}, {len(s.cancels)} cancelled; "
        f"{len(s.edits)} file contents recorded",
    ]
    out += facts + ["", "## Best version", ""]
    best = s.best
    if best is not None:
        n = s.runs.index(best) + 1
        out.append(
            f"**{best.key}** ({best.result.kernel}, sha256 {best.source_sha256[:12]}): {best.verdict}, "
            f"worst speedup {best.verified_speedup:.2f}x over the reference with correctness passed (run {n})."
        )
    else:
        out.append("No version has a verified speedup (none passed correctness with a benchmark that timed it).")
    out += ["", "## Versions", ""]
    if not s.runs:
        out.append("No ladder run finished in this session.")
    for n, (run, diff) in enumerate(zip(s.runs, diffs), start=1):
        out += _version_md(n, run, diff)
    out += ["## Chat", ""]
    chat = _chat_md(session)
    out += chat or ["No chat in this session."]
    problems = [str(p) for p in session.log.problems] + list(s.problems) + blobs.problems
    if problems:
        out += ["", "## Problems reading the log", ""]
        out += [f"- {p}" for p in problems]
    return "\n".join(out).rstrip() + "\n"


def _version_md(n: int, run: VersionRun, diff: VersionDiff) -> list[str]:
    res = run.result
    # a copy (``n``) carries its source version's run: said as such (new-user trial 20 L5: read as a 61.6 s run)
    carried = f" (the run of {res.carried_from}, copied: no run of its own)" if res.carried_from else ""
    out = [
        f"### {n}. {run.key}: {run.verdict}{carried}",
        "",
        f"{_clock(run.t)} UTC, run {run.run_id}, {res.kernel} (sha256 {run.source_sha256[:12]}), {run.device}, "
        + (f"{run.seconds:.1f} s" if not res.carried_from else f"{run.seconds:.1f} s when {res.carried_from} ran"),
        "",
        "| rung | status | seconds | summary |",
        "|---|---|---|---|",
    ]
    for r in res.rungs:
        text = r.summary or (r.error.one_line() if r.error else "")
        status = r.status.value if isinstance(r.status, Status) else str(r.status)
        out.append(f"| {r.name} | {status} | {r.seconds:.2f} | {_cell(text)} |")
    if run.timings:
        out += ["", "| benchmark spec | median µs | reference µs | speedup |", "|---|---|---|---|"]
        for sp in run.timings:
            speed = f"{sp.speedup:.2f}x" if sp.speedup is not None else "-"
            out.append(f"| {_cell(sp.label)} | {fmt(sp.median_us)} | {fmt(sp.ref_median_us)} | {speed} |")
    out += ["", f"Source: {diff.note}."]
    if diff.text:
        lines = diff.text.splitlines()
        shown = lines[:MAX_DIFF_LINES]
        out += ["", "```diff", *shown, "```"]
        if len(lines) > len(shown):
            out.append(f"({len(lines) - len(shown)} more diff lines: `ktui export --format json` has them all)")
    out.append("")
    return out


def _chat_md(session: Session) -> list[str]:
    out: list[str] = []
    for entry in session.state.chat:
        ev = entry.event
        if isinstance(ev, ChatMessage) and ev.role == "user":
            out += [f"**user** ({_clock(ev.at)}):", "", *_quote(ev.text), ""]
        elif isinstance(ev, ChatMessage):
            first = (ev.text.strip().splitlines() or [""])[0]
            out += [f"- ladder results sent to the model: {_cell(first, 200)}", ""]
        elif isinstance(ev, ChatReplyDone):
            usage = f"{ev.prompt_tokens} in + {ev.completion_tokens} out tokens, {fmt_cost(ev.cost_usd)}"
            out += [f"**assistant** ({_clock(ev.at)}, {usage}):", "", *_quote(ev.text), ""]
        elif isinstance(ev, ToolCall):
            detail = f": {_cell(ev.detail, 200)}" if ev.detail else ""
            out += [f"- tool `{ev.name}`({_cell(ev.summary, 120)}) {ev.state}{detail}", ""]
        elif isinstance(ev, ApprovalRequest):
            what = "new file" if ev.new_file else "edit of"
            out += [f"- approval asked: {what} {ev.path} (+{ev.added} -{ev.removed})", ""]
        elif isinstance(ev, ApprovalDecided):
            out += [f"- approval {ev.request_id}: {'approved' if ev.approved else 'refused'}", ""]
        elif isinstance(ev, AgentNotice):
            out += [f"- {ev.level}: {_cell(ev.text, 200)}", ""]
    # consecutive one-line items read as one list: drop the blank line between them
    tidy: list[str] = []
    for i, ln in enumerate(out):
        if ln == "" and tidy and tidy[-1].startswith("- ") and i + 1 < len(out) and out[i + 1].startswith("- "):
            continue
        tidy.append(ln)
    return tidy


# -- JSON (ATIF) ---------------------------------------------------------------------------------------------------
def timestamp(t: float | None) -> str | None:
    """ISO 8601 UTC with milliseconds (``2026-12-01T19:57:54.123Z``), None for None or an impossible time."""
    if t is None:
        return None
    try:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return None


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def trajectory(session: Session) -> dict[str, Any]:
    """The session as an ATIF trajectory with ktui's record under ``extra.ktui`` (see the module's docstring)."""
    s = session.state
    blobs = Blobs(session)
    diffs = version_diffs(session, blobs)
    meta = dict(s.meta or {})
    items: list[tuple[int, str, Any]] = [(e.index, "chat", e) for e in s.chat]
    items += [(r.index, "run", (n, r)) for n, r in enumerate(s.runs)]
    items += [(c.index, "cancel", c) for c in s.cancels]
    items.sort(key=lambda x: x[0])
    steps: list[dict[str, Any]] = []
    agent_step: dict[str, Any] | None = None
    version_step: dict[int, int] = {}
    used_ids: set[str] = set()

    def add(step: dict[str, Any]) -> dict[str, Any]:
        step["step_id"] = len(steps) + 1
        steps.append(step)
        return step

    for _, kind, item in items:
        if kind == "run":
            n, run = item
            step = add(
                _drop_none(
                    {
                        "timestamp": timestamp(run.t),
                        "source": "system",
                        "message": f"ladder result {run.key}: {run.verdict}",
                        "observation": {"results": [{"content": _run_text(run)}]},
                        "extra": {"ktui_kind": "verdict", "version": n},
                    }
                )
            )
            version_step[n] = step["step_id"]
            continue
        if kind == "cancel":
            add(
                _drop_none(
                    {
                        "timestamp": timestamp(item.t),
                        "source": "system",
                        "message": f"run {item.run_id} of {item.key} cancelled during {item.rung}: "
                        f"{item.reason.strip().splitlines()[0] if item.reason.strip() else 'cancelled'}",
                        "extra": {"ktui_kind": "cancel", "key": item.key, "run_id": item.run_id},
                    }
                )
            )
            continue
        ev = item.event
        ts = timestamp(ev.at if isinstance(ev.at, (int, float)) else None)
        if isinstance(ev, ChatMessage) and ev.role == "user":
            add(_drop_none({"timestamp": ts, "source": "user", "message": ev.text}))
            agent_step = None
        elif isinstance(ev, ChatMessage):
            add(
                _drop_none({"timestamp": ts, "source": "system", "message": ev.text, "extra": {"ktui_kind": "results"}})
            )
        elif isinstance(ev, ChatReplyDone):
            metrics = _drop_none(
                {"prompt_tokens": ev.prompt_tokens, "completion_tokens": ev.completion_tokens, "cost_usd": ev.cost_usd}
            )
            agent_step = add(
                _drop_none(
                    {
                        "timestamp": ts,
                        "source": "agent",
                        "model_name": model_name(s) or None,
                        "message": ev.text,
                        "metrics": metrics,
                    }
                )
            )
        elif isinstance(ev, ToolCall):
            if agent_step is None:
                agent_step = add(_drop_none({"timestamp": ts, "source": "agent", "message": ""}))
            cid = ev.call_id or f"call_{entry_index(item)}"
            while cid in used_ids:
                cid = f"{cid}_{entry_index(item)}"
            used_ids.add(cid)
            agent_step.setdefault("tool_calls", []).append(
                {"tool_call_id": cid, "function_name": ev.name, "arguments": {"summary": ev.summary}}
            )
            content = ev.state + (f": {ev.detail}" if ev.detail else "")
            agent_step.setdefault("observation", {"results": []})["results"].append(
                {"source_call_id": cid, "content": content}
            )
        elif isinstance(ev, (ApprovalRequest, ApprovalDecided)):
            target = agent_step
            if target is None:
                target = add(_drop_none({"timestamp": ts, "source": "system", "message": ""}))
            entry: dict[str, Any] = {"request_id": ev.request_id, "timestamp": ts}
            if isinstance(ev, ApprovalRequest):
                entry.update(path=ev.path, new_file=ev.new_file, added=ev.added, removed=ev.removed, diff=ev.diff)
            else:
                entry.update(approved=ev.approved)
            target.setdefault("extra", {}).setdefault("approvals", []).append(entry)
        elif isinstance(ev, AgentNotice):
            add(
                _drop_none(
                    {
                        "timestamp": ts,
                        "source": "system",
                        "message": ev.text,
                        "extra": {"ktui_kind": "notice", "level": ev.level},
                    }
                )
            )
    versions = [_version_json(r, d, version_step.get(n)) for n, (r, d) in enumerate(zip(s.runs, diffs))]
    best = s.best
    problems = [str(p) for p in session.log.problems] + list(s.problems) + blobs.problems
    final = _drop_none(
        {
            "total_prompt_tokens": s.prompt_tokens,
            "total_completion_tokens": s.completion_tokens,
            "total_cost_usd": s.cost,
            "total_steps": len(steps),
        }
    )
    return {
        "schema_version": ATIF_VERSION,
        "session_id": session.id,
        "agent": _drop_none(
            {
                "name": "ktui",
                "version": str(meta.get("ktui_version") or meta.get("version") or __version__),
                "model_name": model_name(s) or None,
            }
        ),
        "notes": "Exported by ktui from sessions/<id>/events.jsonl. Tool call arguments are ktui's one-line "
        "summary of them, not the full arguments. Kernel versions, verdicts and timings are in extra.ktui "
        f"(schema_version {EXPORT_SCHEMA_VERSION}).",
        "steps": steps,
        "final_metrics": final,
        "extra": {
            "ktui": {
                "schema_version": EXPORT_SCHEMA_VERSION,
                "meta": meta,
                "device": dict(s.device) if s.device is not None else None,
                "device_name": device_name(s),
                "ended": session.log.ended,
                "end_reason": s.end_reason,
                "versions": versions,
                "best": {"key": best.key, "speedup": best.verified_speedup, "version": s.runs.index(best)}
                if best
                else None,
                "edits": [
                    {
                        "path": e.path,
                        "sha256": e.sha256,
                        "previous": e.previous,
                        "role": e.role,
                        "bytes": e.bytes,
                        "timestamp": timestamp(e.t),
                    }
                    for e in s.edits
                ],
                "cancels": [
                    {"key": c.key, "run_id": c.run_id, "rung": c.rung, "reason": c.reason, "timestamp": timestamp(c.t)}
                    for c in s.cancels
                ],
                "problems": problems,
            }
        },
    }


def entry_index(entry: Any) -> int:
    """The record index of a chat entry (for a tool call id the model did not give)."""
    return int(getattr(entry, "index", 0))


def _run_text(run: VersionRun) -> str:
    lines = [f"{run.key} ({run.result.kernel}) on {run.device}: {run.verdict}"]
    lines += [r.line() for r in run.result.rungs]
    return "\n".join(lines)


def _version_json(run: VersionRun, diff: VersionDiff, step_id: int | None) -> dict[str, Any]:
    return {
        "step_id": step_id,
        "key": run.key,
        "kernel": run.result.kernel,
        "run_id": run.run_id,
        "timestamp": timestamp(run.t),
        "verdict": run.verdict,
        "ok": run.ok,
        "correct": run.correct,
        "speedup": run.speedup,
        "verified_speedup": run.verified_speedup,
        "seconds": run.seconds,
        "device": run.device,
        "source_sha256": run.source_sha256,
        "timings": [
            {"label": t.label, "median_us": t.median_us, "ref_median_us": t.ref_median_us, "speedup": t.speedup}
            for t in run.timings
        ],
        "diff": {"against": diff.against, "against_sha256": diff.against_sha256, "text": diff.text, "note": diff.note}
        if diff.against
        else None,
        "result": run.result.to_json(),
    }


# -- the command ---------------------------------------------------------------------------------------------------
def export_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui export",
        description="A recorded session as a report: Markdown (versions in order with their diffs, verdicts and "
        "timings, the chat condensed, the best version) or JSON (an ATIF-v1.4 trajectory with ktui's versions and "
        "verdicts under extra.ktui, schema_version 1). Runs nothing.",
        epilog="exit codes: 0 written, 2 usage (no such session, an ambiguous prefix)",
    )
    p.add_argument("session", metavar="SESSION", help="a session id, a unique prefix of one, or a session folder")
    p.add_argument("--format", choices=("md", "json"), default="md", help="md (default) or json")
    p.add_argument("--out", default=None, metavar="FILE", help="write there instead of stdout")
    p.add_argument("--workspace", default=".", help="the workspace whose sessions/ holds it (default: this folder)")
    return p


def cli(argv: list[str]) -> int:
    """``ktui export SESSION --format md|json [--out FILE] [--workspace W]``.

    Raises:
        SessionError: no such session, an ambiguous prefix, or ``--out`` cannot be written.
    """
    args = export_parser().parse_args(argv)
    root = workspace_root(args.workspace)
    session = load(find_session(root, args.session))
    if args.format == "json":
        text = json.dumps(trajectory(session), indent=1, ensure_ascii=False) + "\n"
    else:
        text = markdown(session)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise SessionError(f"cannot write {args.out}: {exc}") from None
        print(f"wrote {args.out} ({args.format}, session {session.id})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
