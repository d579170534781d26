"""The ``ktui`` command.

    ktui [WORKSPACE] [--device auto|cpu|cuda] [--model M]   the interactive session (default: this folder)
    ktui [WORKSPACE] --resume SESSION                        continue a recorded session (its chat, its log)
    ktui run KERNEL_FILE [--json] [--device ...]             run the rung ladder once, headless
    ktui agent PROBLEM -m MESSAGE [--model M] [--max-rounds N] [--yes]   the agent loop, headless
    ktui diff A B [--json] [--side-by-side] [--stage S]      SASS (or PTX, TTGIR...), resources and mix of two versions
    ktui status [WORKSPACE] [--json]                         every version's verdict, speedup and staleness
    ktui init PROBLEM [--workspace DIR]                      a new problem: reference and v1 from a template
    ktui sessions [--workspace W] [--json]                   the recorded sessions: versions, best speedup, cost
    ktui export SESSION --format md|json [--out FILE]        a recorded session as Markdown or an ATIF trajectory
    ktui import kernelbench|gpumode|modelnew PATH ...        problems from KernelBench / GPU MODE (``ktui.importers``)
    ktui export gpumode|kernelbench PROBLEM VERSION          the submission file the upstream harness takes
    ktui eval [PROBLEMS...] [--json] [--device D]            the ladder over a problem set, fast_p and geomean speedup
    ktui eval|agent|(the session) --engine ray [--address A]  ladders on Ray actors, one per GPU (``ktui.core.engines``)
    ktui replay SESSION [--rerun [--device D] [--json]]      a recorded session, read-only; or every version re-run
    ktui context add|add-docs|list|remove|reindex|search ...  the context directory (``ktui.context.cli``)
    ktui mcp [WORKSPACE] [--http] [--port N]                 an MCP server for other agents (``ktui.mcp.cli``)

    ktui schema [COMMAND] [--markdown]                       the JSON Schema of every --json output (``ktui.schemas``)

Exit codes: 0 ok (every rung ok or skipped), 1 a rung failed (``ktui diff``: the dumps of a side could not be
made), 2 bad usage (a one-line error), 3 the environment (a worker could not start: no GPU for ``--device cuda``,
torch missing...). ``ktui agent``: 0 the exchange ended normally, 1 the model request failed, 2 bad usage or no
model configured.

With ``--json`` a command prints one JSON object on stdout whatever happens, its result or its error, in the
envelope of ``ktui.core.envelope`` (``{"schema_version", "command", "exit_code", "data"|"error"}``); the schemas
are ``ktui schema`` and ``docs/json.md``.

Every subcommand goes through ``ktui.core.session.Session`` (headless, ``watch=False``) and prints with
``ktui.core.report`` (``ktui diff`` with ``ktui.core.inspect.diff.render``).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

from ktui import __version__
from ktui.core import envelope
from ktui.core.envelope import ArgumentParser, CommandError, CommandFailed, EnvironmentFailure, UsageError

EXIT_CODES = (
    "exit codes: 0 ok, 1 a rung failed, 2 usage, 3 environment (a worker could not start: no GPU for "
    "--device cuda, torch missing...); with --json the result or the error is one JSON object on stdout "
    "(`ktui schema`)"
)


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """``--engine``, ``--address``, ``--actors`` (``ktui.core.engines.add_engine_args``)."""
    from ktui.core.engines import add_engine_args as add

    add(p)


def _device_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="where kernels run: cuda when a GPU is usable (auto), or cpu (Triton interpreter)",
    )


def _remote_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--remote",
        default=None,
        metavar="HOST",
        help="run the workers on HOST over SSH (an ~/.ssh/config alias or a host name; the rest from [remote] in "
        "ktui.toml); default: [remote] host of ktui.toml, else here",
    )
    p.add_argument("--local", action="store_true", help="run the workers here, whatever [remote] in ktui.toml says")


def remote_config(root: Path, args: argparse.Namespace) -> Any:
    """The ``RemoteConfig`` that ``--remote``/``--local`` and ``[remote]`` of ``ktui.toml`` choose (None: here).

    Raises:
        UsageError: ``[remote]`` is malformed, or both flags were given.
    """
    from ktui.core.remote.config import RemoteConfigError, load_remote

    if args.local and args.remote:
        raise UsageError("--remote and --local exclude each other")
    try:
        return load_remote(root, args.remote, args.local)
    except RemoteConfigError as exc:
        raise UsageError(str(exc)) from None


def _record_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-record",
        action="store_true",
        help="do not record this session under sessions/ (default: recorded unless [sessions] record = false "
        "in ktui.toml)",
    )


def run_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui run",
        description="Run the rung ladder (compile, run, correctness, "
        "benchmark) on one kernel version and print one line per rung.",
        epilog=EXIT_CODES,
    )
    p.add_argument(
        "kernel",
        metavar="KERNEL_FILE",
        help="kernels/<problem>/<version>.py inside a workspace, or problem/version (softmax/v2) of the workspace "
        "above the current folder",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of lines: the envelope {schema_version, command, exit_code, data|error}, "
        "data the result (`ktui schema run`, docs/json.md)",
    )
    _device_arg(p)
    _remote_arg(p)
    p.add_argument("--seed", type=int, default=None, help="base seed for correctness inputs (default: fresh)")
    p.add_argument("--seeds", type=int, default=2, help="seeds per test spec (default 2)")
    p.add_argument(
        "--rungs",
        default=None,
        help="comma-separated rungs to run, with what they need first "
        "(compile, run, correctness, benchmark, dumps, profile, trace); default: all but profile and trace",
    )
    p.add_argument(
        "--ncu-args",
        default=None,
        metavar="ARGS",
        help='more Nsight Compute arguments for the profile rung, one string ("--set full --metrics '
        'smsp__inst_executed.sum"), after [profile] of ktui.toml',
    )
    p.add_argument(
        "--tracer",
        choices=("ktui", "proton"),
        default=None,
        help="the trace rung's tracer: ktui's markers (default, Triton and CuTeDSL) or Proton's instrumentation "
        "(Triton kernels); default: [trace] tracer of ktui.toml, else ktui",
    )
    p.add_argument(
        "--baseline",
        default=None,
        metavar="VERSION",
        help="pin VERSION as the problem's baseline (profile figures show their deltas against it)",
    )
    p.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS|RUNG=SECONDS,...",
        help="time limit of each worker call: every rung (30) or some (compile=20,run=90; dumps uses compile's, "
        "profile benchmark's); default: [ladder.timeouts] in ktui.toml, else 5x what the rung took last time "
        "(at least 30 s for compile and run, 60 s correctness, 120 s benchmark); a problem never run on this device "
        "gets 240 s compile, 120 s run, 300 s correctness, 600 s benchmark, so a first version that hangs takes "
        "two minutes: --timeout run=30 shortens it",
    )
    p.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at a failed first verdict (the first sweep's cases: native inputs, one seed per spec): the run is "
        "cancelled there (a verdict its rungs finished first is kept), exit 1; without it the other cases still run "
        "to name every failing spec",
    )
    _record_arg(p)
    return p


def diff_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui diff",
        description="Compare what the compiler made of two kernel "
        "versions: resources, instruction mix and the normalized SASS diff (dumps are made "
        "first when missing).",
        epilog="exit codes: 0 ok, 1 the dumps of a version could "
        "not be made, 2 usage, 3 environment (a worker could not start)",
    )
    p.add_argument("a", metavar="A", help="a kernel file, or problem/version (softmax/v1)")
    p.add_argument("b", metavar="B", help="another kernel file, or problem/version (softmax/v2)")
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object, the envelope (`ktui schema diff`) whose data has a and b (each with its kernels' "
        "resources, instruction mix, warnings and ncu figures), resources, mix_delta, diff, lines, changed, stage",
    )
    p.add_argument("--side-by-side", action="store_true", help="two columns instead of a unified diff")
    p.add_argument(
        "--config",
        type=int,
        default=None,
        metavar="N",
        help="of an autotuned kernel (each config compiled), compare config N (default: the one matching the other "
        "side's, else the first)",
    )
    p.add_argument(
        "--stage",
        choices=("sass", "ptx", "ttgir", "ttir", "llir"),
        default="sass",
        help="the stage whose normalized text is diffed (default sass; ptx without .loc and register numbers, "
        "ttir/ttgir without loc(...), llir without !dbg)",
    )
    _device_arg(p)
    return p


def agent_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui agent",
        description="Send one message to the agent about PROBLEM and "
        "run the loop (model turns, kernel writes, ladder results) without the TUI; prints "
        "the transcript.",
    )
    p.add_argument(
        "problem",
        metavar="PROBLEM",
        nargs="?",
        default=None,
        help="a problem of the workspace (references/<PROBLEM>.py); with --resume, default: the session's last",
    )
    p.add_argument("-m", "--message", required=True, help="what to ask")
    p.add_argument("--model", default=None, help="a litellm model name (default: KTUI_MODEL or ktui.toml)")
    p.add_argument("--max-rounds", type=int, default=None, help="automatic ladder-result rounds (default 3)")
    p.add_argument("--yes", action="store_true", help="apply writes without asking")
    p.add_argument("--workspace", default=".", help="the workspace (default: the current folder)")
    _resume_arg(p)
    _device_arg(p)
    _remote_arg(p)
    _record_arg(p)
    add_engine_args(p)
    return p


def _resume_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--resume",
        default=None,
        metavar="SESSION",
        help="continue a recorded session of this workspace (an id, a unique prefix of one, or its folder): its "
        "chat goes back to the model, new events append to its log; recorded sources missing from the workspace "
        "or changed there are reported, never overwritten",
    )


def _prepare_resume(root: Path, arg: str | None, no_record: bool) -> Any:
    """The ``ktui.sessions.resume.ResumePlan`` of ``--resume arg`` (None without it).

    Raises:
        UsageError: with ``--no-record``; the session cannot be resumed (``SessionError``'s message).
    """
    if arg is None:
        return None
    if no_record:
        raise UsageError("--resume appends to the session's log: it does not go with --no-record")
    from ktui.sessions.catalog import SessionError
    from ktui.sessions.resume import prepare

    try:
        return prepare(root, arg)
    except SessionError as exc:
        raise UsageError(str(exc)) from None


def cmd_agent(argv: list[str]) -> int:
    args = agent_parser().parse_args(argv)
    from dataclasses import replace

    from ktui.agent.config import SETUP_HINT, ConfigError, load_config
    from ktui.core.workspace import Workspace, WorkspaceError

    try:
        ws = Workspace.at(args.workspace)
        config = load_config(ws.root, args.model)
    except (WorkspaceError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    remote = remote_config(ws.root, args)
    plan = _prepare_resume(ws.root, args.resume, args.no_record)
    problem = args.problem or (plan.problem if plan is not None else None)
    if problem is None:
        why = f"session {plan.id} ran no problem to take it from; " if plan is not None else ""
        raise UsageError(f"give PROBLEM ({why}problems: {', '.join(ws.problems()) or 'none'})")
    if problem not in ws.problems():
        raise UsageError(f"unknown problem {problem!r} (problems: {', '.join(ws.problems()) or 'none'})")
    if not config.configured:
        raise UsageError(SETUP_HINT)
    from ktui.agent.llm import missing_key

    missing = missing_key(config)  # before the workers start, not after the first request
    if missing:
        raise UsageError(missing)
    if args.max_rounds is not None:
        if args.max_rounds < 0:
            raise UsageError("--max-rounds must be 0 or more")
        config = replace(config, max_rounds=args.max_rounds)
    if args.yes:
        config = replace(config, approve="auto")
    from ktui.agent.transcript import run_headless

    if plan is not None:
        for line in plan.lines():
            print(f"ktui: {line}", file=sys.stderr)
    from ktui.core.workers.client import WorkerStartError

    engine = _engine(args, ws, remote)
    try:
        return run_headless(
            ws,
            config,
            problem,
            args.message,
            args.device,
            record=not args.no_record,
            argv=["ktui", "agent", *argv],
            resume=plan,
            remote=remote,
            engine=engine,
        )
    except WorkerStartError as exc:  # the remote cannot be reached or used
        raise EnvironmentFailure(str(exc)) from None
    finally:
        if engine is not None:
            engine.stop()


def _engine(args: argparse.Namespace, ws: Any, remote: Any = None) -> Any:
    """The engine of ``--engine`` (None for local), started; its errors as ktui's exit codes.

    Raises:
        UsageError: ``--address``/``--actors`` without ``--engine ray``, ``--actors`` below 1, ``--engine ray``
            with a remote host (``--remote`` or ``[remote]``: the Ray engine places its actors itself).
        EnvironmentFailure: Ray missing, or the Ray engine could not start.
    """
    from ktui.core.engines import EngineError, make_engine
    from ktui.core.ladder import LadderOptions

    if remote is not None and args.engine != "local":
        raise UsageError(
            f"--engine {args.engine} and a remote host ({remote.host}) exclude each other: Ray places "
            "its actors on its cluster's GPUs itself (use --local, or drop --engine)"
        )
    try:
        return make_engine(args.engine, ws, args.device, LadderOptions(), args.address, args.actors)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except EngineError as exc:
        raise EnvironmentFailure(str(exc)) from None


def tui_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui",
        description="A terminal assistant for writing GPU kernels: saving a kernel reruns its rung ladder "
        "(in the app, ? lists the keys, ctrl+p the commands). Commands (each with --help): "
        + "; ".join(f"`ktui {name}{' ' + args if args else ''}` {what}" for name, args, what in COMMAND_HELP)
        + ".",
        epilog=EXIT_CODES,
    )
    p.add_argument("workspace", nargs="?", default=".", help="a folder with references/ and kernels/ (default .)")
    _device_arg(p)
    _remote_arg(p)
    p.add_argument("--model", default=None, help="a litellm model name for the chat (default: KTUI_MODEL or ktui.toml)")
    _resume_arg(p)
    _record_arg(p)
    add_engine_args(p)
    p.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS|RUNG=SECONDS,...",
        help="time limit of each worker call, as `ktui run --timeout` takes it (every rung, or some: run=90); "
        "default: [ladder.timeouts] in ktui.toml",
    )
    p.add_argument("--version", action="version", version=f"ktui {__version__}")
    return p


class Signalled(BaseException):
    """SIGTERM or SIGHUP reached a headless command: unwinds it like ctrl+c, so that its session stops the workers
    (``finally``); the exit code is 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise ``Signalled`` in the main thread (the default would end ktui without stopping its
    workers; they die with it anyway, by their parent-death signal, but a kernel's own children would not)."""
    import signal
    import threading

    def handler(signum: int, frame: object) -> None:
        raise Signalled(signum)

    if threading.current_thread() is threading.main_thread():  # (only the main thread may set handlers)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, handler)


class RunningRung:
    """``ktui run``'s line for the rung under way: on a terminal one line rewritten twice a second
    (``[compile] running 3 s (limit 30 s without progress)``), elsewhere (a pipe, a log) the same line on stderr after
    ``FIRST_NOTE_S`` and then every ``NOTE_EVERY_S``. Finished rungs print their ``report.rung_lines`` in its place.

    Args:
        out: where to write (stdout; with ``--json``, stderr: stdout is the envelope alone).
        limit_of: the time limit of a rung's calls, seconds (``Session.limits`` through ``timeouts.LIMIT_OF``).
    """

    FIRST_NOTE_S = 5.0
    NOTE_EVERY_S = 15.0
    TICK_S = 0.5
    CASE_SHOWN = 110  # characters of the case under way on the line (a fuzzed, laid-out case's label runs longer)
    SLOW_CASE_S = 60.0  # a fuzzed case under way this long gets one note on bounding the fuzzed sizes (``slow_note``)

    def __init__(self, out: Any, limit_of: Callable[[str], float | None]):
        import threading

        self.out = out
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        # In a pipe or a log the notes go to stderr: stdout stays the rung lines (or the JSON) a script reads.
        self.notes = out if self.tty else sys.stderr
        self.limit_of = limit_of
        self._lock = threading.Lock()
        self._rung: tuple[str, float] | None = None  # the rung under way and when it started (monotonic)
        # the rung's last progress: (rung, done, total, when: monotonic, the step, its limit, the case under way)
        self._progress: tuple[str, int, int, float, str, float, str] | None = None
        self._noted = 0.0  # seconds into the rung of the last note (not a terminal)
        self._shown = False  # the terminal's last line is ours
        self._slow_noted: set[str] = set()  # the fuzzed cases a ``slow_note`` was written for
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="ktui-run-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._clear()
            self._rung = None

    def elapsed(self) -> tuple[str, float] | None:
        """The rung under way and its seconds so far, or None."""
        import time

        r = self._rung
        return (r[0], time.monotonic() - r[1]) if r else None

    def on_event(self, ev: Any) -> None:
        """The bus subscriber: ``RungStarted`` starts the clock, ``RungFinished`` prints the rung, ``FirstVerdict``
        a note (``first_verdict_line``) while the other cases run."""
        import time

        from ktui.core import report
        from ktui.core.events import FirstVerdict, RungFinished, RungProgress, RungStarted

        if isinstance(ev, RungProgress):
            with self._lock:
                if self._rung is not None and ev.rung == self._rung[0] and ev.total:
                    self._progress = (ev.rung, ev.done, ev.total, time.monotonic(), ev.detail, ev.limit_s, ev.case)
        elif isinstance(ev, FirstVerdict):
            with self._lock:
                self._clear()
                if not self._stop.is_set():
                    self._write(first_verdict_line(ev) + "\n", self.notes)
        elif isinstance(ev, RungStarted):
            with self._lock:
                self._rung, self._noted, self._progress = (ev.rung, time.monotonic()), 0.0, None
        elif isinstance(ev, RungFinished):
            with self._lock:
                self._clear()
                self._rung = None
                if not self._stop.is_set():
                    self._write("\n".join(report.rung_lines(ev.result)) + "\n")

    def line(self, rung: str, seconds: float) -> str:
        """``[compile] running 12 s (limit 30 s without progress)``; once the rung's worker has reported progress,
        ``[run] running 111 s, 40 of 111 done, the last 2 s ago (limit 120 s without progress)``: the limit is on
        the time since the last case finished, not on the rung's total (a new user read 111 s of 120 as close);
        a step of the rung with its own progress names it: ``[run] running 80 s, compiling the distinct launches for
        sm_90a: 3 of 37 done, the last 1 s ago (...)``; the case under way ends it, when the worker named it (``,
        now spec=(7, 1025, 300, bf16) seed=2140164860 layout=transposed``, cut to ``CASE_SHOWN`` characters)."""
        import time

        limit = self.limit_of(rung)
        from ktui.core.results import fmt_seconds
        from ktui.core.workers.client import IDLE_STEPS_CAP

        text = f"[{rung}] running {seconds:.0f} s"
        now = ""
        p = self._progress
        ago = None
        if p is not None and p[0] == rung:
            step = f"{p[4]}: " if p[4] else ""
            ago = time.monotonic() - p[3]
            text += f", {step}{p[1]} of {p[2]} done, the last {ago:.0f} s ago"
            if p[6]:  # the case under way (new-user trial 24, F4: only a timeout's message named it), last: a
                # terminal's width cuts it before the limit
                now = f", now {p[6] if len(p[6]) <= self.CASE_SHOWN else p[6][: self.CASE_SHOWN - 3] + '...'}"
            if p[5]:  # a step with a limit of its own (the run rung's launch compiles)
                limit = p[5]
        if not limit:
            return text + now
        # the cap on the call's whole time too, from the start (new-user trial 22 F1 met it after 20 minutes, never
        # told of it)
        in_all = max(IDLE_STEPS_CAP * float(limit), float(getattr(limit, "total", 0.0)))
        # past the limit since the last case, yet running: the case under way still advances, each program the
        # interpreter finishes counting as progress (new-user trial 27, F4: "the last 495 s ago (limit 300 s
        # without progress" read as a limit not kept)
        still = (
            "; the case under way still advances: each program it finishes resets the limit"
            if (ago is not None and ago > float(limit))
            else ""
        )
        return text + f" (limit {fmt_seconds(limit)} s without progress{still}, {fmt_seconds(in_all)} s in all)" + now

    def slow_note(self) -> str:
        """One note, once per case, when the case under way is on a fuzzed spec and has run ``SLOW_CASE_S`` since
        the last case finished: the CPU interpreter runs a launch's programs one by one, and a drawn size past two
        waves of tiles is tens of thousands of them for a kernel of small tiles (new-user trial 28, F1: a GEMV's
        ``fuzzed(1539, 1665, 64)`` took over 10 minutes a case, and nothing said that ``fuzz = {...}`` bounds it);
        '' otherwise."""
        import time

        p = self._progress
        if p is None or not p[6] or "fuzzed(" not in p[6] or time.monotonic() - p[3] < self.SLOW_CASE_S:
            return ""
        label = p[6].split(" seed=")[0]
        if label in self._slow_noted:
            return ""
        self._slow_noted.add(label)
        return (
            f"note: {label} has run {self.SLOW_CASE_S:.0f} s: under the CPU interpreter every program of a launch "
            "runs in turn, and a fuzzed size drawn past the tests (up to the benchmark's) can be tens of thousands "
            'of them; bound the fuzzed sizes with `fuzz = {"m": (1, 512), ...}` in the reference (README, fuzz) '
            "or run on a GPU"
        )

    def tty_line(self, rung: str, seconds: float) -> str:
        """``line``, cut to the terminal's width less one: a line that wraps is not rewritten in place by ``\r``,
        and each tick left one more (new-user trial 25, F14: a 100-column terminal filled with progress lines)."""
        width = shutil.get_terminal_size((120, 24)).columns - 1
        text = self.line(rung, seconds)
        return text if len(text) <= width else text[: max(width - 3, 0)] + "..."

    def _tick(self) -> None:
        while not self._stop.wait(self.TICK_S):
            with self._lock:
                now = self.elapsed()
                if now is None or self._stop.is_set():
                    continue
                rung, secs = now
                slow = self.slow_note()
                if slow:
                    self._clear()
                    self._write(slow + "\n", self.notes)
                if self.tty:
                    self._write("\r\x1b[2K" + self.tty_line(rung, secs))
                    self._shown = True
                elif secs >= (self._noted + self.NOTE_EVERY_S if self._noted else self.FIRST_NOTE_S):
                    self._noted = secs
                    self._write(self.line(rung, secs) + "\n", self.notes)

    def _clear(self) -> None:
        if self._shown:
            self._write("\r\x1b[2K")
            self._shown = False

    def _write(self, text: str, to: Any = None) -> None:
        to = to or self.out
        try:
            to.write(text)
            to.flush()
        except (OSError, ValueError):
            pass  # the terminal went away (SIGHUP): the run goes on to its end or its signal


def first_verdict_line(ev: Any) -> str:
    """``[correctness] first verdict: ok on 14 cases (native inputs, one seed per spec) after 2.1 s; the rest
    running``, and the summary when it failed."""
    r = ev.result
    text = (
        f"[correctness] first verdict: {r.status.value} on {ev.cases} cases (native inputs, one seed per spec) "
        f"after {ev.seconds:.1f} s; the rest running"
    )
    return text + (f": {r.summary}" if r.status.value != "ok" else "")


def cmd_run(argv: list[str]) -> int:
    args = run_parser().parse_args(argv)
    from ktui.core import report
    from ktui.core.ladder import LadderOptions
    from ktui.core.results import DEFAULT_RUNGS, RUNG_ORDER, expand_rungs
    from ktui.core.session import Session
    from ktui.core.timeouts import LIMIT_OF, TimeoutConfigError, load_policy, parse_timeout_arg
    from ktui.core.workers.client import WorkerStartError
    from ktui.core.workspace import WorkspaceError, resolve_kernel

    if args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    names = [r.strip() for r in args.rungs.split(",") if r.strip()] if args.rungs is not None else None
    if names == []:
        raise UsageError(f"--rungs names no rung; rungs: {', '.join(RUNG_ORDER)}")
    try:
        rungs = expand_rungs(names) if names else DEFAULT_RUNGS
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        ws, kernel = resolve_kernel(args.kernel)
    except WorkspaceError as exc:
        raise UsageError(str(exc)) from None
    if args.baseline:
        from ktui.core.ladder import Baselines

        if args.baseline not in [v.version for v in ws.versions(kernel.problem)]:
            raise UsageError(f"no version {args.baseline!r} of {kernel.problem} to pin as the baseline")
        Baselines(ws).pin(kernel.problem, args.baseline)
    try:
        ncu_args = tuple(shlex.split(args.ncu_args)) if args.ncu_args else ()
    except ValueError as exc:
        raise UsageError(f"--ncu-args: {exc}") from None
    try:
        policy = load_policy(ws.root, parse_timeout_arg(args.timeout) if args.timeout is not None else None)
    except TimeoutConfigError as exc:
        raise UsageError(str(exc)) from None
    remote = remote_config(ws.root, args)
    try:
        session = Session(
            ws,
            args.device,
            options=LadderOptions(seeds=args.seeds, seed=args.seed, rungs=rungs, ncu_args=ncu_args, tracer=args.tracer),
            watch=False,
            timeouts=policy,
            remote=remote,
        )
    except WorkerStartError as exc:  # the remote cannot be reached or used (ktui.core.remote.link.LinkError)
        raise EnvironmentFailure(str(exc)) from None
    # with --json stdout is the envelope alone: the same lines (header, rungs, running notes) go to stderr
    shown = sys.stderr if args.json else sys.stdout
    progress = RunningRung(shown, lambda rung: session.limits.get(LIMIT_OF.get(rung, rung)))
    recorder = _start_recorder(session, "run", argv, args.no_record)
    end = "error"  # the end record's reason, unless the run ends or a signal stops it
    session.start()
    try:
        try:
            info = session.device_info()
        except WorkerStartError as exc:
            end = f"error: {exc}"
            raise EnvironmentFailure(str(exc)) from None
        if recorder is not None:
            recorder.note_device(info)
            print(f"ktui: recording session {recorder.id}", file=sys.stderr, flush=True)
        host = f" on {session.remote}" if session.remote else ""  # the workers' host, when not here
        print(report.run_header(kernel.key, info) + host, file=shown, flush=True)
        session.bus.subscribe(progress.on_event)
        failed_first: list[Any] = []  # --fail-fast: the failed first verdict that cancelled the run
        if args.fail_fast:
            session.bus.subscribe(_fail_fast(session, kernel.key, failed_first))
        progress.start()
        try:
            result = session.run(kernel)
        except CancelledError:
            if not failed_first:
                raise
            progress.close()
            first = failed_first[0]
            message = (
                f"{kernel.key}: stopped at a failed first verdict (--fail-fast; {first.cases} native cases): "
                f"{first.result.summary}"
            )
            # (the ladder's own line said it: "[correctness] FAILED first verdict (16 cases; the full run was
            # cancelled): ...", new-user trial 35, F15)
            end = "stopped at a failed first verdict"
            if args.json:
                print(envelope.dumps(envelope.failure("run", "failed", message, envelope.FAILED)))
            return envelope.FAILED
        end = "done"
    except (KeyboardInterrupt, Signalled) as exc:
        where = progress.elapsed()
        progress.close()
        session.stop()  # the workers (and whatever the kernel started) are killed; nothing is stored
        what = "ctrl+c" if isinstance(exc, KeyboardInterrupt) else _signal_name(exc.signum)
        end = f"stopped by {what}"
        during = f" during {where[0]} after {where[1]:.1f} s" if where else ""
        message = f"{kernel.key}: stopped by {what}{during}; no verdict stored"
        code = envelope.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else 128 + exc.signum
        try:
            print(f"ktui: {message}", file=sys.stderr)
            if args.json:
                print(envelope.dumps(envelope.failure("run", "interrupted", message, code)), flush=True)
        except OSError:
            pass
        return code
    finally:
        progress.close()
        session.stop()
        if recorder is not None:
            recorder.close(end)
    code = envelope.OK if result.ok else envelope.FAILED
    from ktui.core.store import LastVersion

    LastVersion(ws).set(kernel.key)  # the TUI starts on it
    corr = result.rung("correctness")
    seed = corr.figures.get("seed") if corr is not None else None
    if isinstance(seed, int) and args.seed is None:  # drawn for this run: how to draw the same cases again
        print(f"seed {seed}: ktui run {args.kernel} --seed {seed} draws these cases again", file=shown, flush=True)
    if args.json:
        return envelope.emit("run", result.to_json(), code)
    return code


def _fail_fast(session: Any, key: str, failed: list[Any]) -> Any:
    """A bus subscriber for ``ktui run --fail-fast``: at a FAILED first verdict of ``key`` it keeps the event in
    ``failed`` and cancels the run, from a thread of its own (the event comes on the ladder's thread, which the cancel
    ends)."""
    import threading

    from ktui.core.events import FirstVerdict
    from ktui.core.results import Status

    def on_event(ev: Any) -> None:
        if isinstance(ev, FirstVerdict) and ev.key == key and ev.result.status is Status.FAILED and not failed:
            failed.append(ev)
            threading.Thread(
                target=session.cancel, kwargs={"reason": "--fail-fast: the first verdict failed"}, daemon=True
            ).start()

    return on_event


def _start_recorder(session: Any, command: str, argv: list[str], disabled: bool) -> Any:
    """The session's recorder (``ktui.sessions.record.maybe_record``), its warnings printed on stderr; None when
    not recording."""
    from ktui.sessions.record import maybe_record

    recorder, warnings = maybe_record(session, command, ["ktui", command, *argv], disabled=disabled)
    for w in warnings:
        print(f"ktui: {w}", file=sys.stderr)
    return recorder


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def cmd_diff(argv: list[str]) -> int:
    args = diff_parser().parse_args(argv)
    from ktui.core.inspect.diff import DiffError, compare_results, has_current_dumps, render
    from ktui.core.session import Session
    from ktui.core.store import ResultStore
    from ktui.core.workers.client import WorkerStartError
    from ktui.core.workspace import WorkspaceError, resolve_kernel

    refs = []
    for f in (args.a, args.b):
        try:
            refs.append(resolve_kernel(f))
        except WorkspaceError as exc:
            raise UsageError(str(exc)) from None
    sessions: dict[Path, Session] = {}  # one per workspace, only when a side has no current dumps
    items = []
    try:
        for ws, k in refs:
            res = ResultStore(ws).load(k.problem, k.version)
            if not has_current_dumps(ws, k, res, args.stage):
                # no current dumps of this side: compiled now (for sm_90a on the CPU), which takes a while
                print(f"ktui diff: compiling {k.key} and dumping its code ...", file=sys.stderr, flush=True)
                t0 = time.perf_counter()
                session = sessions.get(ws.root)
                if session is None:
                    session = sessions[ws.root] = Session(ws, args.device, watch=False)
                    session.start()
                    try:
                        session.device_info()
                    except WorkerStartError as exc:
                        raise EnvironmentFailure(str(exc)) from None
                res = session.result_for(k, rungs=("dumps",))
                failed = next((r for r in res.rungs if r.name in ("compile", "dumps") and not r.ok), None)
                took = f"{time.perf_counter() - t0:.1f} s"
                if failed:  # (the result merges stored rungs of the same source: only these two matter here)
                    # not "dumped" first (new-user trial 25, F18)
                    raise CommandFailed(f"{k.key}: could not dump its code ({took}): {failed.line()}")
                print(f"ktui diff: {k.key} dumped in {took}", file=sys.stderr, flush=True)
            assert res is not None  # has_current_dumps() is False for None, so a None was replaced by a run
            items.append((ws, k, res))
    finally:
        for session in sessions.values():
            session.stop()
    try:
        result = compare_results(items, stage=args.stage, config=args.config)
    except (DiffError, OSError) as exc:
        raise CommandFailed(str(exc)) from None
    if args.json:
        return envelope.emit("diff", result.to_json())
    print(render(result, side_by_side=args.side_by_side))
    return 0


def cmd_tui(argv: list[str]) -> int:
    args = tui_parser().parse_args(argv)
    from ktui.core.workspace import Workspace, WorkspaceError

    try:
        ws = Workspace.at(args.workspace)
    except WorkspaceError as exc:
        raise UsageError(str(exc)) from None
    from ktui.agent.config import ConfigError, load_config
    from ktui.core.device import cuda_available

    remote = remote_config(ws.root, args)
    if remote is None and args.device == "cuda" and args.engine == "local" and not cuda_available():
        raise UsageError("--device cuda, but no CUDA GPU is usable on this machine (use --device cpu or auto)")
    from ktui.core.timeouts import TimeoutConfigError, load_policy, parse_timeout_arg

    try:  # (new-user trial 29, F3: the TUI refused --timeout, which the README gives every command)
        policy = load_policy(ws.root, parse_timeout_arg(args.timeout)) if args.timeout is not None else None
    except TimeoutConfigError as exc:
        raise UsageError(str(exc)) from None
    plan = _prepare_resume(ws.root, args.resume, args.no_record)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            "the ktui session needs a terminal; for scripts use `ktui run KERNEL_FILE` or "
            "`ktui agent PROBLEM -m MESSAGE`"
        )
    try:
        config = load_config(ws.root, args.model)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    engine = _engine(args, ws, remote)
    from ktui.tui.app import KtuiApp

    session = None
    if remote is not None:  # connected (and the device resolved there) before the screen, so a failure is one line
        from ktui.core.session import Session
        from ktui.core.workers.client import WorkerStartError

        try:
            session = Session(ws, args.device, remote=remote, timeouts=policy)
        except WorkerStartError as exc:
            raise EnvironmentFailure(str(exc)) from None
    app = KtuiApp(
        ws,
        device=args.device,
        session=session,
        agent_config=config,
        handle_signals=True,
        record=not args.no_record,
        resume=plan,
        owns_session=session is not None,
        engine=engine,
        timeouts=policy,
    )
    try:
        app.run()
    finally:
        if session is not None:
            session.stop()  # (a no-op when the app stopped it)
        if engine is not None:
            engine.stop()
    return app.return_code or 0  # 128 + the signal when SIGTERM or SIGHUP ended it


COMMAND_HELP: tuple[tuple[str, str, str], ...] = (
    ("run", "KERNEL_FILE", "climbs one version's ladder, headless"),
    ("agent", "PROBLEM -m MESSAGE", "the LLM loop, headless"),
    ("diff", "A B", "what the compiler made of two versions"),
    ("status", "[WORKSPACE|PROBLEM]", "where every version stands"),
    ("init", "PROBLEM", "writes a reference and a first version to fill"),
    ("sessions", "", "the recorded sessions"),
    ("export", "SESSION", "writes one out"),
    ("replay", "SESSION", "replays one"),
    ("context", "COMMAND", "the searchable context directory"),
    ("mcp", "", "serves ktui to an MCP client"),
    ("import", "SOURCE", "brings KernelBench or GPU MODE problems in"),
    ("eval", "[PROBLEM]", "runs a problem's versions (or all) and ranks them"),
    ("schema", "[COMMAND]", "the JSON every command prints with --json"),
)
"""Each subcommand with its arguments and what it does: the ``ktui --help`` list."""

COMMANDS = tuple(name for name, _, _ in COMMAND_HELP)
CONTEXT_COMMANDS = ("add", "add-docs", "list", "remove", "reindex", "search")


def json_command(argv: list[str]) -> str | None:
    """The command an envelope names (``run``, ``context search``...) when ``argv`` asks for ``--json``, else
    None: then an error is printed as the envelope too (``ktui.core.envelope``)."""
    if "--json" not in argv:
        return None
    first = argv[0] if argv else ""
    if first == "context":
        sub = next((a for a in argv[1:] if a in CONTEXT_COMMANDS), None)
        return f"context {sub}" if sub else "context"
    return first if first in COMMANDS else "ktui"


def fail(command: str | None, kind: envelope.ErrorKind, message: str, code: int) -> int:
    """Report a command that ends without a result: one line on stderr (none for an interruption, whose line the
    command printed), and with ``--json`` (``command`` not None) the error envelope on stdout. Returns ``code``."""
    if kind != "interrupted":
        print(f"ktui: error: {message}", file=sys.stderr)
    if command is not None:
        try:
            print(envelope.dumps(envelope.failure(command, kind, message, code)), flush=True)
        except OSError:  # stdout is gone (a closed pipe): the exit code still says it
            pass
    return code


def cmd_schema(argv: list[str]) -> int:
    """``ktui schema``: ``ktui.schemas.cli``."""
    from ktui.schemas import cli

    return cli(argv)


def cmd_mcp(argv: list[str]) -> int:
    """``ktui mcp``: ``ktui.mcp.cli.cli``."""
    from ktui.mcp.cli import McpUsageError, cli

    try:
        return cli(argv)
    except McpUsageError as exc:
        raise UsageError(str(exc)) from None


def cmd_sessions(argv: list[str]) -> int:
    """``ktui sessions``: ``ktui.sessions.catalog.cli``."""
    from ktui.sessions.catalog import SessionError, cli

    try:
        return cli(argv)
    except SessionError as exc:
        raise UsageError(str(exc)) from None


def cmd_context(argv: list[str]) -> int:
    """``ktui context ...``: ``ktui.context.cli.cli``."""
    from ktui.context.cli import cli
    from ktui.context.index import ContextError

    try:
        return cli(argv)
    except ContextError as exc:
        raise UsageError(str(exc)) from None


def cmd_export(argv: list[str]) -> int:
    """``ktui export``: ``ktui.sessions.export.cli``; ``ktui export gpumode|kernelbench PROBLEM VERSION``:
    ``ktui.importers.cli.export_cli``."""
    if argv and argv[0] in ("gpumode", "kernelbench"):
        return _importers("export_cli", argv)
    from ktui.sessions.catalog import SessionError
    from ktui.sessions.export import cli

    try:
        return cli(argv)
    except SessionError as exc:
        raise UsageError(str(exc)) from None


def _importers(name: str, argv: list[str]) -> int:
    """``ktui import``, ``ktui export gpumode|kernelbench`` and ``ktui eval``: ``ktui.importers.cli.<name>``."""
    from ktui.importers import cli
    from ktui.importers.common import ImporterError

    try:
        code: int = getattr(cli, name)(argv)
    except (ImporterError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return code


def replay_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui replay",
        description="Replay a recorded session read-only in the TUI: step through its events (right/left), jump to "
        "the next or previous ladder result (n/p), message (m/M) or edit (e/E), autoplay (space, +/- speed); every "
        "panel shows the session as of the current event. With --rerun, headless: run every version the session "
        "ran through today's ladder and print recorded and new verdicts and timings side by side.",
        epilog="exit codes: 0 ok (--rerun: no verdict changed), 1 (--rerun) a verdict changed or a version could not "
        "be re-run, 2 usage (no such session), 3 environment (--rerun: a worker could not start)",
    )
    p.add_argument("session", metavar="SESSION", help="a session id, a unique prefix of one, or a session's folder")
    p.add_argument("--workspace", default=".", help="the workspace whose sessions/ holds it (default: this folder)")
    p.add_argument("--at", default=None, metavar="N|end", help="start at event N (from 1), or at the end")
    p.add_argument(
        "--rerun",
        action="store_true",
        help="re-run every recorded version (its exact kernel and reference sources) through today's ladder, in a "
        "temporary workspace, and flag where it diverges: verdict, rung, timing, device",
    )
    p.add_argument(
        "--device",
        default=None,
        choices=("auto", "cpu", "cuda"),
        help="with --rerun: where the versions run (default auto: cuda when a GPU is usable)",
    )
    p.add_argument(
        "--band",
        type=float,
        default=None,
        metavar="PERCENT",
        help="with --rerun: a benchmark median further than this from the recorded one diverges (default 10)",
    )
    p.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS|RUNG=SECONDS,...",
        help="with --rerun: the time limit of each worker call, as `ktui run --timeout` takes it (a session holding "
        "a version that hangs re-runs with a short limit)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --rerun: one JSON object, the envelope (`ktui schema replay`) whose data has session, log, band, "
        "device {recorded, now, diverged}, problems, "
        "versions (key, kernel_sha256, reference_sha256, rungs, runs, recorded, new, diverged, divergence "
        "[{kind, message}], error), diverged, verdicts_changed",
    )
    return p


def cmd_replay(argv: list[str]) -> int:
    """``ktui replay SESSION [--rerun]``: the read-only replay TUI (``ktui.tui.replay``), or the re-run of every
    recorded version (``ktui.sessions.rerun``)."""
    args = replay_parser().parse_args(argv)
    from ktui.sessions.catalog import SessionError, find_session, workspace_root
    from ktui.sessions.log import LOG_NAME, read_log

    if not args.rerun and (args.json or args.device or args.band is not None or args.timeout is not None):
        raise UsageError("--json, --device, --band and --timeout go with --rerun")
    limits = None
    if args.timeout is not None:
        from ktui.core.timeouts import TimeoutConfigError, parse_timeout_arg

        try:
            limits = parse_timeout_arg(args.timeout)
        except TimeoutConfigError as exc:
            raise UsageError(str(exc)) from None
    if args.band is not None and not args.band > 0:
        raise UsageError("--band must be a positive percentage")
    try:
        folder = find_session(workspace_root(args.workspace), args.session)
    except SessionError as exc:
        raise UsageError(str(exc)) from None
    given = Path(args.session)
    log = read_log(given if given.is_file() else folder / LOG_NAME)
    if not log.records:
        why = "; ".join(str(p) for p in log.problems[:3]) or "it is empty"
        raise UsageError(f"{log.path} holds no readable record: {why}")
    if args.rerun:
        from ktui.core.workers.client import WorkerStartError
        from ktui.sessions.rerun import BAND, lines, rerun

        def note(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        band = BAND if args.band is None else args.band / 100
        try:
            rep = rerun(log, args.device or "auto", band, note=None if args.json else note, timeouts=limits)
        except WorkerStartError as exc:
            raise EnvironmentFailure(str(exc)) from None
        code = envelope.FAILED if rep.verdicts_changed else envelope.OK
        if args.json:
            return envelope.emit("replay", rep.to_json(), code)
        print("\n".join(lines(rep)))
        return code
    at: int | None = None
    if args.at is not None:
        if args.at == "end":
            at = len(log.records)
        elif args.at.isdigit():
            at = int(args.at)
        else:
            raise UsageError(f"--at takes an event number or 'end', not {args.at!r}")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the replay needs a terminal; for scripts use `ktui export SESSION` or `--rerun --json`")
    from ktui.tui.replay import ReplayApp

    ReplayApp(log, session_dir=log.path.parent, position=at).run()
    return 0


def status_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui status",
        description="Every problem and version of the workspace with its latest verdict, speedup and whether that "
        "verdict is stale (the kernel or the reference changed since it ran). Runs nothing.",
        epilog="exit codes: 0 ok, 2 usage (not a workspace)",
    )
    p.add_argument(
        "workspace",
        nargs="?",
        default=".",
        help="the workspace (default: the current folder), or one problem of the workspace here (`ktui status "
        "softmax`), or one version (`ktui status softmax/v2`)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object, the envelope (`ktui schema status`) whose data has workspace, problems (problem, "
        "reference, reference_error, versions: key, kernel, "
        "verdict, ok, failed_rung, reference_error, speedup, stale, ran_at, device)",
    )
    return p


def cmd_status(argv: list[str]) -> int:
    args = status_parser().parse_args(argv)
    from ktui.core import report
    from ktui.core.status import status_json, workspace_status
    from ktui.core.workspace import Workspace, WorkspaceError

    only = None
    version = None  # PROBLEM/VERSION (as run and diff name a version): that version alone
    try:
        ws = Workspace.at(args.workspace)
    except WorkspaceError as exc:  # perhaps a problem's name (as ktui eval takes one), of the workspace here
        try:
            here = Workspace.find(".")
        except WorkspaceError:
            raise UsageError(str(exc)) from None
        names = here.problems()
        head, _, tail = args.workspace.removesuffix(".py").removeprefix("kernels/").partition("/")
        if tail and head in names and not Path(args.workspace).is_dir():
            args.workspace, version = head, f"{head}/{tail}"
        if args.workspace not in names:
            if Path(args.workspace).is_dir():
                raise UsageError(str(exc)) from None
            raise UsageError(
                f"{args.workspace} is neither a folder nor a problem of the workspace {here.root} (its problems: "
                f"{', '.join(names) or 'none'})"
            ) from None
        ws, only = here, args.workspace
    problems = [p for p in workspace_status(ws) if only is None or p.problem == only]
    if version is not None:
        known = [v.key for p in problems for v in p.versions]
        problems = [dataclasses.replace(p, versions=[v for v in p.versions if v.key == version]) for p in problems]
        if not any(p.versions for p in problems):
            raise UsageError(f"{version} is no version of {only} (its versions: {', '.join(known) or 'none'})")
    if args.json:
        return envelope.emit("status", status_json(ws, problems))
    # one version named: its whole reason (new-user trial 32, F8: a compile timeout's cut to a line)
    print("\n".join(report.status_lines(problems, whole=version is not None)))
    return 0


def init_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="ktui init",
        description="Start a problem: references/PROBLEM.py (an elementwise op on the tail sizes) and "
        "kernels/PROBLEM/v1.py (a Triton version that passes the ladder), to edit into your op. Makes references/ "
        "and kernels/ when the folder has none. Overwrites nothing.",
        epilog="exit codes: 0 written, 2 usage (a bad name, the files exist)",
    )
    p.add_argument("problem", metavar="PROBLEM", help="the problem's name (a Python identifier)")
    p.add_argument("--workspace", default=".", help="the workspace (default: the current folder)")
    return p


def cmd_init(argv: list[str]) -> int:
    args = init_parser().parse_args(argv)
    from ktui.core.scaffold import ScaffoldError, init_problem

    root = Path(args.workspace).resolve()
    if not root.is_dir():
        raise UsageError(f"no such folder: {args.workspace}")
    try:
        made = init_problem(root, args.problem)
    except (ScaffoldError, OSError) as exc:
        raise UsageError(str(exc)) from None
    for path in (made.reference, made.kernel):
        print(f"created {path.relative_to(root)}")
    print(f"next: make them your op, then `ktui run {made.kernel.relative_to(root)}` (or `ktui` to watch every save)")
    return 0


def not_a_command(word: str) -> str | None:
    """The usage error for a first argument that is neither a command nor an existing path (a mistyped
    subcommand, say), with the nearest command; None when ``word`` is an option or a path that exists."""
    if word in COMMANDS or word.startswith("-") or Path(word).exists():
        return None
    import difflib

    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.5)
    hint = f"did you mean `ktui {near[0]}`?" if near else f"commands: {', '.join(COMMANDS)}"
    return f"{word!r} is neither a command nor a folder: {hint} (or give a workspace folder)"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    stop_on_signals()
    as_json = json_command(argv)
    try:
        if argv and argv[0] == "status":
            code = cmd_status(argv[1:])
        elif argv and argv[0] == "init":
            code = cmd_init(argv[1:])
        elif argv and argv[0] == "sessions":
            code = cmd_sessions(argv[1:])
        elif argv and argv[0] == "export":
            code = cmd_export(argv[1:])
        elif argv and argv[0] == "replay":
            code = cmd_replay(argv[1:])
        elif argv and argv[0] == "context":
            code = cmd_context(argv[1:])
        elif argv and argv[0] == "import":
            code = _importers("import_cli", argv[1:])
        elif argv and argv[0] == "eval":
            code = _importers("eval_cli", argv[1:])
        elif argv and argv[0] == "mcp":
            code = cmd_mcp(argv[1:])
        elif argv and argv[0] == "schema":
            code = cmd_schema(argv[1:])
        elif argv and (mistyped := not_a_command(argv[0])):
            raise UsageError(mistyped)
        elif argv and argv[0] == "run":
            code = cmd_run(argv[1:])
        elif argv and argv[0] == "agent":
            code = cmd_agent(argv[1:])
        elif argv and argv[0] == "diff":
            code = cmd_diff(argv[1:])
        else:
            code = cmd_tui(argv)
    except CommandError as exc:
        code = fail(as_json, exc.kind, str(exc), exc.exit_code)
    except KeyboardInterrupt:
        code = fail(as_json, "interrupted", "stopped by ctrl+c", envelope.INTERRUPTED)
    except Signalled as exc:
        code = fail(as_json, "interrupted", f"stopped by {_signal_name(exc.signum)}", 128 + exc.signum)
    except BrokenPipeError:  # `ktui diff A B | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
