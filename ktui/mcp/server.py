"""``ktui mcp``: ktui's ladder as Model Context Protocol tools, for other agents (Claude Code, Codex, Gemini CLI...).

One ``McpWorkbench`` holds what ``ktui run`` holds: a headless ``Session`` (its worker pool: the workers are
separate processes that own torch, so a kernel that crashes or hangs takes down a worker, never the server), the
agent's ``Workbench`` (its path confinement and its context search) and the session's recorder. ``build_server``
turns it into an ``MCPServer`` (the official SDK's, ``mcp`` 2.x) whose tools are:

- ``list_problems``: every problem, its versions and their last verdicts (this session's runs, else the stored
  ``.ktui/results/``).
- ``read_source``: a problem's reference or one of its versions.
- ``write_version``: a version's whole source, confined like ktui's own agent (``Workbench.prepare_write``):
  ``kernels/<problem>/<version>.py`` only; a path that leads out of the workspace, an absolute path or any other
  file is refused with the reason.
- ``run_ladder``: the rungs on a version, as ``ktui run`` runs them; the structured result (every rung, its figures,
  a failure's trimmed traceback). Progress: a notification per event of the run (``RungStarted``, ``RungProgress``:
  a batch of cases, ``FirstVerdict``, ``RungFinished``) and at least every ``HEARTBEAT_S`` in between, so that a
  client capping a call's time sees it alive. An MCP cancel of the request (``notifications/cancelled``) gives its
  ticket up (``Scheduler.release``): a run still queued behind another leaves the queue and never runs, the run
  under way is cancelled (the busy workers are killed and replaced; a hanging kernel included), and a run another
  request of the same version also waits on goes on for that one.
- ``diff_versions``: what ``ktui diff`` shows (resources, instruction mix, the normalized SASS diff); the dumps
  rung runs first on a side that has none for its current source.
- ``profile``: the profile rung (Nsight Compute; skipped on the CPU, and it says so).
- ``trace``: the trace rung (the kernel's ktui.trace regions per warp and CTA; skipped on the CPU, and it says so).
- ``search_context``: ``Workbench.search_context`` (the context index, hits as path:line).

Resources: ``ktui://docs/problem-format`` (what a reference module declares), ``ktui://docs/checks`` (what the checks
catch and the rules they follow) and ``ktui://docs/cases`` (the catalog of wrong kernels): the README's sections and
``docs/cases.md`` as they are, read when asked.

Every event of the session goes to its log under ``sessions/`` (``ktui.sessions.record.maybe_record``, as
``ktui run`` does), and each tool call is a ``ToolCall`` event there too (``running``, then ``done`` or ``error``).

No MCP *tasks* (SEP-1686: a ``tools/call`` answered at once with a task handle that the client polls): ``mcp``
2.3.0 has none to offer. Its 2025-11-25 task types (``mcp_types._v2025_11_25``: ``TaskMetadata``,
``CreateTaskResult``, ``ToolExecution.task_support``, ``CallToolRequestParams.task``) are wire models only:
``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` are left out of its method table on purpose
(``mcp_types/methods.py``), ``MCPServer.tool`` cannot declare ``taskSupport`` and a request's ``task`` is ignored.
The 2026-07-28 revision moved tasks to the ``io.modelcontextprotocol/tasks`` extension (SEP-2663); 2.3.0 has the
extension API (``MCPServer(extensions=...)``, ``mcp.server.extension``) but not that extension (python-sdk PR
#3005) nor a client for it (python-sdk#3226). Long runs are served by progress notifications and cancel instead.
"""

import hashlib
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

import ktui
from ktui.agent.events import ToolCall, ToolCallState
from ktui.agent.tools import MAX_READ_CHARS, NAME_RE, Workbench
from ktui.agent.tools import ToolError as WorkbenchError
from ktui.core import report
from ktui.core.events import Event, FileChanged, FirstVerdict, LadderStarted, RungFinished, RungProgress, RungStarted
from ktui.core.inspect.diff import DiffJson
from ktui.core.ladder import LadderOptions
from ktui.core.results import DEFAULT_RUNGS, LadderResult, RungResult, device_label, expand_rungs
from ktui.core.session import Session
from ktui.core.status import workspace_status
from ktui.core.timeouts import TimeoutPolicy
from ktui.core.workspace import KERNELS, KernelRef, Workspace
from ktui.mcp.schema import (
    ErrorOut,
    ProblemOut,
    ProblemsOut,
    RungOut,
    RunOut,
    SearchOut,
    SourceOut,
    VersionOut,
    WriteOut,
)

HEARTBEAT_S = 5.0
"""The longest gap between two progress notifications of a run, seconds (a rung that reports nothing, a kernel that
hangs). The MCP spec leaves it to the server; clients that reset their timeout on progress (Claude Code, the SDK's
own client) need one well within their cap (60 s in the TypeScript SDK: typescript-sdk#2250)."""

STEP = 1e-6
"""The least a notification's progress grows over the one before (the spec wants it to increase every time)."""

POLL_S = 0.2
"""How often a waiting tool looks at its run's events and at the client's cancel, seconds."""

TRACEBACK_CHARS = 4000
"""A failed rung's traceback is cut to its last this many characters (the end names the cause)."""

CANCEL_REASON = "cancelled by the MCP client"

REPO_ROOT = Path(ktui.__file__).resolve().parent.parent
"""Where README.md and docs/ are (a source checkout or an editable install)."""

DOCS: dict[str, tuple[str, str, str]] = {
    # uri: (file, the heading of the section to serve or '' for the whole file, description)
    "ktui://docs/problem-format": (
        "README.md",
        "## The workspace and the problem format",
        "What a reference module declares (generate_input, ref_kernel, tests, benchmarks, tolerance...) and what "
        "a version defines (custom_kernel): the workspace layout",
    ),
    "ktui://docs/checks": (
        "docs/checks.md",
        "",
        "The rules the ladder's checks follow: what each rung verifies, the tolerances, what fails a version",
    ),
    "ktui://docs/cases": (
        "docs/cases.md",
        "",
        "The catalog of wrong kernels ktui catches, each with its honest twin",
    ),
}


def section(text: str, heading: str) -> str:
    """The Markdown section of ``text`` that starts at the line ``heading`` (``## Title``), up to the next heading
    of the same or a higher level; '' when there is none."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == heading)
    except StopIteration:
        return ""
    end = len(lines)
    for i in range(start + 1, len(lines)):
        m = re.match(r"^(#+) ", lines[i])
        if m and len(m.group(1)) <= level:
            end = i
            break
    return "\n".join(lines[start:end]).rstrip() + "\n"


def rung_out(r: RungResult) -> RungOut:
    """``r`` as a tool returns it (its traceback cut to its last ``TRACEBACK_CHARS``)."""
    from ktui.protocol import json_safe

    error: ErrorOut | None = None
    if r.error is not None:
        tb = r.error.traceback
        if len(tb) > TRACEBACK_CHARS:
            tb = "... (cut)\n" + tb[-TRACEBACK_CHARS:]
        error = {"type": r.error.type, "message": r.error.message, "traceback": tb}
    return {
        "name": r.name,
        "status": r.status.value,
        "ok": r.ok,
        "seconds": round(r.seconds, 4),
        "summary": r.summary,
        "figures": json_safe(r.figures),
        "error": error,
        "warnings": list(r.warnings),
    }


def run_out(result: LadderResult) -> RunOut:
    """A ladder result as ``run_ladder`` returns it."""
    failed = result.failed_rung
    return {
        "key": result.key,
        "problem": result.problem,
        "version": result.version,
        "kernel": result.kernel,
        "ok": result.ok,
        "verdict": report.verdict(result)[0],
        "failed_rung": failed.name if failed else None,
        "device": device_label(result.device),
        "seconds": round(result.seconds, 4),
        "source_sha256": result.source_sha256,
        "rungs": [rung_out(r) for r in result.rungs],
        "report": report.for_model(result),
    }


class RunProgress:
    """Turns one run's events into progress notifications: ``(progress, total, message)`` with ``progress``
    strictly increasing (the MCP spec's rule) and ``total`` the number of rungs; a rung's share grows with its
    ``RungProgress`` ticks (cases or specs done of total).

    Subscribe ``on_event`` to the session's bus (it runs on the publishing thread and only queues); ``drain`` on
    the server's event loop returns the notifications to send.

    Args:
        key: the version run, ``problem/version``.
        rungs: the rungs planned (those of its ``LadderStarted`` replace them).
        base: where this run's share starts (a tool that runs several ladders in one request: ``diff_versions``).
        total: the request's total (default ``base`` + the rungs).
        start: the last value already sent for the request (the next one is above it).
    """

    def __init__(
        self, key: str, rungs: Sequence[str], base: float = 0.0, total: float | None = None, start: float = 0.0
    ):
        self.key = key
        self.rungs = list(rungs)
        self.base = base
        self._total = total
        self.run_id: int | None = None
        self.rung: str | None = None
        self.value = start
        self.started = time.monotonic()
        self.rung_started = self.started
        self.last_sent = self.started
        self.sent = 0
        self.events: queue.SimpleQueue[Event] = queue.SimpleQueue()

    @property
    def total(self) -> float:
        """The request's total: ``total``, else ``base`` plus the number of rungs."""
        return float(self._total) if self._total is not None else self.base + max(len(self.rungs), 1)

    def on_event(self, ev: Event) -> None:
        """Queue ``ev`` when it is about this run's version (the bus's thread)."""
        if getattr(ev, "key", None) == self.key and isinstance(
            ev, (LadderStarted, RungStarted, RungProgress, FirstVerdict, RungFinished)
        ):
            self.events.put(ev)

    def _at(self, rung: str, frac: float) -> float:
        """Rung ``i``'s share is ``[base + i, base + i + 1)``: its cases move it up to ``+ 0.9``, its end to
        ``+ 0.95``; what comes between (a heartbeat, a first verdict) adds ``STEP``."""
        i = self.rungs.index(rung) if rung in self.rungs else 0
        return self.base + i + min(max(frac, 0.0), 1.0) * 0.9

    def _note(self, value: float, message: str) -> tuple[float, float, str] | None:
        """The notification at ``value`` (above the last one sent, by ``STEP`` at least); None past ``total``."""
        value = max(value, self.value + STEP)
        if value > self.total:
            return None
        self.value = value
        self.last_sent = time.monotonic()
        self.sent += 1
        return self.value, self.total, message

    def drain(self, waiting_on: str | None = None) -> list[tuple[float, float, str]]:
        """The notifications due now: one per queued event of this run, else a heartbeat when ``HEARTBEAT_S``
        passed since the last (``waiting_on``: the version that runs before this one, while it waits)."""
        out: list[tuple[float, float, str] | None] = []
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                break
            run_id = getattr(ev, "run_id", None)
            if isinstance(ev, LadderStarted):
                if self.run_id is None:
                    self.run_id = ev.run_id
                    self.rungs = list(ev.rungs) or self.rungs
                    out.append(self._note(self.value, f"{self.key}: ladder started ({', '.join(ev.rungs)})"))
                continue
            if self.run_id is None or run_id != self.run_id:
                continue
            if isinstance(ev, RungStarted):
                self.rung, self.rung_started = ev.rung, time.monotonic()
                out.append(self._note(self._at(ev.rung, 0.0), f"[{ev.rung}] started"))
            elif isinstance(ev, RungProgress):
                # The judge prepares a later rung's reference outputs while an earlier one runs: news of a rung
                # planned, not progress of the rung under way; of a rung not planned, nothing to report.
                if ev.rung not in self.rungs:
                    continue
                frac = ev.done / ev.total if ev.total and ev.rung == self.rung else 0.0
                detail = f" {ev.detail}" if ev.detail else ""
                value = self._at(ev.rung, frac) if ev.rung == self.rung else self.value
                out.append(self._note(value, f"[{ev.rung}] {ev.done}/{ev.total}{detail}"))
            elif isinstance(ev, FirstVerdict):
                out.append(
                    self._note(
                        self.value,
                        f"[correctness] first verdict: {ev.result.status.value} on {ev.cases} cases after "
                        f"{ev.seconds:.1f} s; the rest running",
                    )
                )
            elif isinstance(ev, RungFinished):
                out.append(self._note(self._at(ev.result.name, 1.0) + 0.05, ev.result.line()))
        now = time.monotonic()
        if not out and now - self.last_sent >= HEARTBEAT_S:
            if self.run_id is None:
                msg = f"{self.key}: waiting for {waiting_on or 'the queue'} ({now - self.started:.0f} s)"
            else:
                msg = f"[{self.rung or 'starting'}] running {now - self.rung_started:.0f} s"
            out.append(self._note(self.value, msg))
        return [n for n in out if n is not None]


class McpWorkbench:
    """The state behind ``ktui mcp``: a headless session on ``workspace`` and the agent's tools bound to it.

    Args:
        workspace: the workspace served.
        device: ``auto``, ``cpu`` or ``cuda`` (where versions run).
        seeds: seeds per test spec for the correctness rung (``ktui run --seeds``).
        timeouts: the session's time-limit policy (default: ``ktui.toml`` ``[ladder]``, else derived).
        record: record the session under ``sessions/`` (unless ``[sessions] record = false``).
        argv: the command line, for the session's metadata.
        log: where warnings for the human go (stderr: stdout is the MCP stream).
    """

    def __init__(
        self,
        workspace: Workspace,
        device: str = "auto",
        seeds: int = 2,
        timeouts: TimeoutPolicy | None = None,
        record: bool = True,
        argv: Sequence[str] = (),
        log: Callable[[str], None] | None = None,
    ):
        self.ws = workspace
        self.bench = Workbench(workspace)
        self.session = Session(
            workspace,
            device,
            options=LadderOptions(seeds=seeds, rungs=DEFAULT_RUNGS),
            watch=False,
            timeouts=timeouts,
        )
        self.record = record
        self.argv = list(argv)
        self.log = log or (lambda s: None)
        self.recorder: Any = None
        self._calls = 0
        self._lock = threading.Lock()

    # -- life --------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start recording (before the workers, so their first states are in the log), then the session."""
        from ktui.sessions.record import maybe_record

        self.recorder, warnings = maybe_record(
            self.session, "mcp", ["ktui", "mcp", *self.argv], disabled=not self.record
        )
        for w in warnings:
            self.log(f"ktui: {w}")
        if self.recorder is not None:
            self.log(f"ktui: recording session {self.recorder.id}")
        self.session.start()

    def stop(self, reason: str = "done") -> None:
        """Close the log with ``reason``, then stop the workers. Safe to call twice.

        The log is closed first (unlike ``ktui run``): a client that closed the stream kills the server's process
        tree after a grace period (2 s in the SDK's stdio client: ``PROCESS_TERMINATION_TIMEOUT``), shorter than the
        workers' own shutdown (``WorkerPool.stop``'s 3 s); the workers' last ``stopped`` states are not recorded."""
        if self.recorder is not None:
            self.recorder.close(reason)
            self.recorder = None
        self.session.stop()

    # -- helpers -------------------------------------------------------------------------------------------------
    def call(self, name: str, summary: str) -> "_Call":
        """A tool call's record: ``ToolCall`` events on the session's bus (``running``, then ``done``/``error``)."""
        with self._lock:
            self._calls += 1
            n = self._calls
        return _Call(self, f"mcp-{n}", name, summary)

    def kernel(self, problem: str, version: str) -> KernelRef:
        """The existing version ``problem/version``.

        Raises:
            ToolError: a bad name, an unknown problem or version.
        """
        self.problem(problem)
        if not isinstance(version, str) or not NAME_RE.match(version):
            raise ToolError(f"refused: {version!r} is not a version name (e.g. v3)")
        k = KernelRef(problem, version, self.ws.root)
        if not k.path.is_file():
            versions = ", ".join(v.version for v in self.ws.versions(problem)) or "none"
            raise ToolError(f"no version {version!r} of {problem}; versions: {versions}")
        try:
            self.bench.resolve(str(k.path.relative_to(self.ws.root)))
        except WorkbenchError as exc:
            raise ToolError(str(exc)) from None
        return k

    def problem(self, problem: str) -> str:
        """``problem`` when the workspace has it. Raises ToolError otherwise."""
        if not isinstance(problem, str) or not NAME_RE.match(problem):
            raise ToolError(f"refused: {problem!r} is not a problem name (letters, digits, _)")
        if problem not in self.ws.problems():
            raise ToolError(f"unknown problem {problem!r}; problems: {', '.join(self.ws.problems()) or 'none'}")
        return problem

    # -- tools ---------------------------------------------------------------------------------------------------
    def list_problems(self) -> ProblemsOut:
        problems: list[ProblemOut] = []
        for p in workspace_status(self.ws, self.session.results()):
            versions: list[VersionOut] = [
                {
                    "version": v.version,
                    "kernel": v.kernel,
                    "verdict": v.verdict,
                    "ok": v.ok,
                    "failed_rung": v.failed_rung,
                    "speedup": v.speedup,
                    "stale": v.stale,
                    "device": v.device,
                }
                for v in p.versions
            ]
            problems.append(
                {
                    "problem": p.problem,
                    "reference": p.reference,
                    "reference_error": p.reference_error,
                    "versions": versions,
                }
            )
        return {"workspace": str(self.ws.root), "problems": problems}

    def read_source(self, problem: str, version: str | None = None) -> SourceOut:
        self.problem(problem)
        path = self.ws.reference_path(problem) if version is None else self.kernel(problem, version).path
        rel = str(path.relative_to(self.ws.root))
        try:
            p = self.bench.resolve(rel)
        except WorkbenchError as exc:
            raise ToolError(str(exc)) from None
        if not p.is_file():
            raise ToolError(f"no such file: {rel}")
        data = p.read_bytes()
        text = data.decode(errors="replace")
        truncated = len(text) > MAX_READ_CHARS
        return {
            "path": rel,
            "text": text[:MAX_READ_CHARS] if truncated else text,
            "sha256": hashlib.sha256(data).hexdigest(),
            "truncated": truncated,
        }

    def write_version(
        self, source: str, problem: str | None = None, version: str | None = None, path: str | None = None
    ) -> WriteOut:
        """Write a version's whole source, confined as ``Workbench.prepare_write`` confines the agent's writes.

        Raises:
            ToolError: an absolute path, a path that leads out of the workspace or is not
                ``kernels/<problem>/<version>.py``, a bad or unknown name, a source without ``custom_kernel``.
        """
        if path is not None:
            problem, version = self._write_target(path, problem, version)
        if problem is None:
            raise ToolError("give the problem (or path: kernels/<problem>/<version>.py)")
        try:
            pending = self.bench.prepare_write(problem, source, version)
            self.bench.apply_write(pending)
        except WorkbenchError as exc:
            raise ToolError(str(exc)) from None
        self.session.bus.publish(FileChanged(path=str(pending.kernel.path)))  # the recorder keeps its source
        return {
            "problem": pending.kernel.problem,
            "version": pending.kernel.version,
            "path": str(pending.kernel.path.relative_to(self.ws.root)),
            "new_file": pending.new_file,
            "diff": pending.diff,
            "added": pending.added,
            "removed": pending.removed,
        }

    def _write_target(self, path: str, problem: str | None, version: str | None) -> tuple[str, str]:
        where = f"kernels/<problem>/<version>.py inside the workspace {self.ws.root}"
        if not isinstance(path, str) or not path.strip():
            raise ToolError(f"refused: give a path {where}")
        if os.path.isabs(path) or path.startswith("~"):
            raise ToolError(f"refused: {path!r} is an absolute path; only {where} can be written")
        try:
            p = self.bench.resolve(path)
        except WorkbenchError as exc:
            raise ToolError(f"{exc}; only {where} can be written") from None
        rel = p.relative_to(self.ws.root.resolve())
        if len(rel.parts) != 3 or rel.parts[0] != KERNELS or rel.suffix != ".py":
            raise ToolError(f"refused: {path!r} is not a kernel version; only {where} can be written")
        got = (rel.parts[1], rel.stem)
        if (problem is not None and problem != got[0]) or (version is not None and version != got[1]):
            raise ToolError(f"refused: path {path!r} names {got[0]}/{got[1]}, not {problem}/{version}")
        return got

    def search_context(self, query: str, max_results: int = 10) -> SearchOut:
        try:
            text = self.bench.search_context(query, max_results)
        except WorkbenchError as exc:
            raise ToolError(str(exc)) from None
        return {"query": query, "text": text}

    async def run(
        self,
        ctx: Context | None,
        kernel: KernelRef,
        rungs: tuple[str, ...] | None,
        prog: RunProgress | None = None,
    ) -> LadderResult:
        """Run ``kernel``'s ladder (``rungs``: those and what they need; default: the session's) through the
        session's queue, reporting progress to ``ctx`` (through ``prog``, default a new ``RunProgress``); an MCP
        cancel cancels the run.

        Raises:
            ToolError: the run could not serve a result (the kernel file was deleted, the session stopped).
        """
        planned = expand_rungs(list(rungs)) if rungs else self.session.options.rungs
        prog = prog or RunProgress(kernel.key, planned)
        unsub = self.session.bus.subscribe(prog.on_event)
        try:
            ticket = self.session.submit(kernel, rungs)
            try:
                while not ticket.done():
                    running = self.session.scheduler.running
                    for value, total, message in prog.drain(running if running != kernel.key else None):
                        if ctx is not None:
                            await ctx.report_progress(value, total, message)
                    await anyio.sleep(POLL_S)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._cancel, ticket)
                raise
            for value, total, message in prog.drain():
                if ctx is not None:
                    await ctx.report_progress(value, total, message)
            try:
                result = ticket.result(0)
            except Exception as exc:  # a cancel from elsewhere, a stopped session
                why = getattr(ticket, "cancelled_because", "") or f"{type(exc).__name__}: {exc}"
                raise ToolError(f"{kernel.key}: no result ({why})") from None
            if result is None:
                raise ToolError(f"{kernel.key} was deleted before it ran")
            return result
        finally:
            unsub()

    def _cancel(self, ticket: Any, wait_s: float = 15.0) -> str:
        """Give the cancelled request's ticket up (``Scheduler.release``): a run still queued behind another leaves
        the queue and never runs; the run under way is cancelled and waited for (``wait_s`` at most: its busy
        workers are killed and replaced, so the next call finds the queue free); a run another request still waits
        on goes on for it. Returns what ``release`` did."""
        what = self.session.scheduler.release(ticket, CANCEL_REASON)
        if what == "cancelled":
            deadline = time.monotonic() + wait_s
            while not ticket.done() and time.monotonic() < deadline:
                time.sleep(0.05)
        return what

    async def diff(self, ctx: Context | None, problem: str, a: str, b: str, stage: str) -> DiffJson:
        """``ktui diff --json``'s data for versions ``a`` and ``b`` of ``problem`` (the dumps rung runs first on a side
        without dumps of its current source).

        Raises:
            ToolError: a bad name, a side whose compile or dumps failed, a stage a side has no text of.
        """
        from ktui.core.inspect.diff import DiffError, compare_results, has_current_dumps

        sides = [self.kernel(problem, v) for v in (a, b)]
        to_run = [k for k in sides if not has_current_dumps(self.ws, k, self.session.latest(k), stage)]
        planned = expand_rungs(["dumps"])
        total = float(len(planned) * len(to_run)) or None
        items = []
        last = 0.0
        for k in sides:
            res = self.session.latest(k)
            if k in to_run and not has_current_dumps(self.ws, k, res, stage):  # (a == b: once)
                base = float(len(planned) * to_run.index(k))
                prog = RunProgress(k.key, planned, base=base, total=total, start=last)
                own = await self.run(ctx, k, ("dumps",), prog)
                last = prog.value
                failed = next((r for r in own.rungs if r.name in ("compile", "dumps") and not r.ok), None)
                if failed is not None:
                    raise ToolError(f"{k.key}: {failed.line()}")
                res = self.session.latest(k) or own
            assert res is not None
            items.append((self.ws, k, res))
        try:
            return compare_results(items, stage=stage).to_json()
        except (DiffError, OSError) as exc:
            raise ToolError(str(exc)) from None

    def doc(self, uri: str) -> str:
        """The text of the resource ``uri`` (``DOCS``), read now.

        Raises:
            ResourceError: the file (or its section) is not there (an installed copy without the README).
        """
        file, heading, _ = DOCS[uri]
        path = REPO_ROOT / file
        try:
            text = path.read_text()
        except OSError as exc:
            raise ResourceError(f"{uri}: {path} cannot be read ({exc}); see ktui's README") from None
        out = section(text, heading) if heading else text
        if not out:
            raise ResourceError(f"{uri}: {path} has no section {heading!r}")
        return out


class _Call:
    """A context manager publishing a tool call's ``ToolCall`` events; an exception marks it ``error``."""

    def __init__(self, owner: McpWorkbench, call_id: str, name: str, summary: str):
        self.owner, self.call_id, self.name, self.summary = owner, call_id, name, summary
        self.detail = ""

    def _publish(self, state: ToolCallState, detail: str = "") -> None:
        self.owner.session.bus.publish(
            ToolCall(call_id=self.call_id, name=self.name, summary=self.summary, state=state, detail=detail)
        )

    def __enter__(self) -> "_Call":
        self._publish("running")
        return self

    def __exit__(self, tp: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self._publish("done", self.detail)
        elif isinstance(exc, _cancelled_types()):
            self._publish("error", CANCEL_REASON)
        else:
            self._publish("error", f"{type(exc).__name__}: {exc}" if not isinstance(exc, ToolError) else str(exc))


def _cancelled_types() -> tuple[type[BaseException], ...]:
    """The exception an MCP cancel raises in a tool: anyio's for the running loop (on a sync tool's thread there is
    none: asyncio's)."""
    import asyncio

    try:
        return (anyio.get_cancelled_exc_class(), asyncio.CancelledError)
    except Exception:  # not in an event loop's thread
        return (asyncio.CancelledError,)


def _rungs_arg(rungs: list[str] | None) -> tuple[str, ...] | None:
    if not rungs:
        return None
    try:
        return expand_rungs(rungs)
    except ValueError as exc:
        raise ToolError(str(exc)) from None


INSTRUCTIONS = """\
ktui verifies and times GPU kernels (Triton, CuTeDSL) against a reference. A workspace holds references/<problem>.py
(the reference: generate_input, ref_kernel, tests, benchmarks, tolerance) and kernels/<problem>/<version>.py (each
version defines custom_kernel(data)). Write a version with write_version, then run_ladder: compile, run,
correctness (many cases, layouts, distributions, anti-cheat checks), benchmark, dumps; a version is right only when
every rung is ok. Read ktui://docs/problem-format and ktui://docs/checks first. A result on 'cpu (interpreter)' is
not a GPU verdict and has no speedup."""


def build_server(bench: McpWorkbench) -> MCPServer:
    """The MCP server of ``bench``'s workspace: its tools and resources (see the module's docstring)."""
    mcp = MCPServer("ktui", instructions=INSTRUCTIONS, version=ktui.__version__)

    @mcp.tool(title="List problems and versions")
    def list_problems() -> ProblemsOut:
        """Every problem of the workspace: its reference file and its versions, each with its last verdict
        (✓ ok / ✓ 1.23x / ✗ <rung> / ! reference / · not run), the first failed rung, the worst speedup and
        whether the stored result is stale (the file changed since)."""
        with bench.call("list_problems", ""):
            return bench.list_problems()

    @mcp.tool(title="Read a reference or a version")
    def read_source(problem: str, version: str | None = None) -> SourceOut:
        """The source of references/<problem>.py (no version) or kernels/<problem>/<version>.py."""
        with bench.call("read_source", f"{problem}/{version or 'reference'}"):
            return bench.read_source(problem, version)

    @mcp.tool(title="Write a kernel version")
    def write_version(
        source: str, problem: str | None = None, version: str | None = None, path: str | None = None
    ) -> WriteOut:
        """Write the whole source of a kernel version: kernels/<problem>/<version>.py (it must define
        custom_kernel(data)). Name it by problem (and version; without one, the next free vN) or by path
        (kernels/<problem>/<version>.py, relative to the workspace). Nothing else can be written: a path outside
        the workspace's kernels/ folder is refused. Returns the diff against what it replaced."""
        with bench.call("write_version", path or f"{problem}/{version or 'new'}") as call:
            out = bench.write_version(source, problem, version, path)
            call.detail = out["path"]
            return out

    @mcp.tool(title="Run the ladder on a version")
    async def run_ladder(problem: str, version: str, ctx: Context, rungs: list[str] | None = None) -> RunOut:
        """Run the rung ladder on kernels/<problem>/<version>.py: compile, run, correctness, benchmark, dumps (by
        default), or only `rungs` (with what they need first; rungs: compile, run, correctness, benchmark, dumps,
        profile). Returns every rung with its status, summary, figures and a failure's trimmed traceback. Reports
        progress per rung and per batch of cases; cancelling the request stops the run (a hanging kernel too)."""
        chosen = _rungs_arg(rungs)
        with bench.call("run_ladder", f"{problem}/{version} {','.join(chosen or ())}".rstrip()) as call:
            result = await bench.run(ctx, bench.kernel(problem, version), chosen)
            call.detail = report.verdict(result)[0]
            return run_out(result)

    @mcp.tool(title="Diff two versions' compiled code")
    async def diff_versions(problem: str, a: str, b: str, ctx: Context, stage: str = "sass") -> DiffJson:
        """What the compiler made of two versions of a problem: resources (registers, spills, shared memory), the
        instruction-mix delta and the unified diff of the normalized SASS (or stage: ptx, ttgir, ttir, llir). The
        dumps rung runs first on a version that has no dumps of its current source."""
        with bench.call("diff_versions", f"{problem} {a} {b} {stage}"):
            return await bench.diff(ctx, problem, a, b, stage)

    @mcp.tool(title="Profile a version")
    async def profile(problem: str, version: str, ctx: Context) -> RunOut:
        """The profile rung on a version: Nsight Compute on one call after warm-up (compile runs first). On a
        machine without a GPU it is skipped, and its summary says why."""
        with bench.call("profile", f"{problem}/{version}") as call:
            result = await bench.run(ctx, bench.kernel(problem, version), ("profile",))
            call.detail = report.verdict(result)[0]
            return run_out(result)

    @mcp.tool(title="Trace a version")
    async def trace(problem: str, version: str, ctx: Context) -> RunOut:
        """The trace rung on a version: one call of the kernel with its ktui.trace regions timed per warp and CTA
        (each region's median, spread and share; CTA imbalance, waves and tail; the critical path; a timeline per
        SM), traced apart from the benchmark, with the untraced and traced times side by side. On a machine without
        a GPU, or for a version that marks no region, it is skipped, and its summary says why."""
        with bench.call("trace", f"{problem}/{version}") as call:
            result = await bench.run(ctx, bench.kernel(problem, version), ("trace",))
            call.detail = report.verdict(result)[0]
            return run_out(result)

    @mcp.tool(title="Search the context")
    def search_context(query: str, max_results: int = 10) -> SearchOut:
        """Search the context index: the installed Triton and CuTeDSL packages, the workspace's context/ folder
        (CUTLASS, the PTX ISA...), its references, kernels and dumps. An exact symbol returns its definition first;
        prefix with kind:code, kind:docs, kind:ptx or kind:dumps to search one kind. Hits are path:line with a
        snippet: cite what you use."""
        with bench.call("search_context", query):
            return bench.search_context(query, max_results)

    for uri, (_, _, description) in DOCS.items():
        mcp.resource(uri, name=uri.rsplit("/", 1)[-1], description=description, mime_type="text/markdown")(
            _reader(bench, uri)
        )
    return mcp


def _reader(bench: McpWorkbench, uri: str) -> Callable[[], str]:
    def read() -> str:
        return bench.doc(uri)

    return read
