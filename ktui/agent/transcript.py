"""``ktui agent``: the loop without the TUI, its transcript printed as it happens."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from ktui.agent.agent import Agent
from ktui.agent.config import AgentConfig
from ktui.agent.events import (
    AgentNotice,
    ApprovalRequest,
    ChatDelta,
    ChatMessage,
    ChatReplyDone,
    ChatReplyReset,
    ToolCall,
)
from ktui.core.events import Event
from ktui.core.ladder import LadderOptions
from ktui.core.session import Session
from ktui.core.workspace import Workspace


def format_usage(ev: ChatReplyDone) -> str:
    """``[usage line]`` (``ktui.core.report.usage_line``) under each reply of the transcript."""
    from ktui.core import report

    return f"[{report.usage_line(ev)}]"


class Printer:
    """Writes the transcript: the human's message, the reply as it streams, tool calls, ladder results, notices;
    asks y/n on the terminal for each write unless the agent applies them itself (``--yes``)."""

    def __init__(self, agent: Agent, out: TextIO = sys.stdout, ask: bool = True):
        self.agent = agent
        self.out = out
        self.ask = ask
        self.failed = False
        self._open = False
        self._draw: dict[type[Event], Callable[[Any], None]] = {
            ChatDelta: self._delta,
            ChatReplyDone: self._reply_done,
            ChatReplyReset: self._reply_reset,
            ChatMessage: self._message,
            ToolCall: self._tool_call,
            ApprovalRequest: self._approval,
            AgentNotice: self._notice,
        }

    def __call__(self, ev: Event) -> None:
        draw = self._draw.get(type(ev))
        if draw is not None:
            draw(ev)
            self.out.flush()

    def _delta(self, ev: ChatDelta) -> None:
        if not self._open:
            self.out.write("assistant: ")
            self._open = True
        self.out.write(ev.text)

    def _reply_done(self, ev: ChatReplyDone) -> None:
        if self._open:
            self.out.write("\n")
        self._open = False
        self.out.write(f"  {format_usage(ev)}\n")

    def _reply_reset(self, ev: ChatReplyReset) -> None:
        self.out.write("\n  (the reply above broke off; asking again)\n")
        self._open = False

    def _message(self, ev: ChatMessage) -> None:
        if ev.role == "user":
            self.out.write(f"> {ev.text}\n")
        elif ev.role == "results":
            self.out.write("\n".join("  | " + ln for ln in ev.text.splitlines()) + "\n")

    def _tool_call(self, ev: ToolCall) -> None:
        if ev.state != "running":
            self.out.write(
                f"  [{ev.name}{'(' + ev.summary + ')' if ev.summary else ''}] {ev.state}"
                f"{': ' + ev.detail if ev.detail else ''}\n"
            )

    def _approval(self, ev: ApprovalRequest) -> None:
        w = self.out.write
        against = f" (new, from {ev.base})" if ev.new_file and ev.base else " (new file)" if ev.new_file else ""
        w(f"  write {ev.path}{against}: +{ev.added} -{ev.removed}\n")
        w("\n".join("    " + ln for ln in ev.diff.splitlines()) + "\n")
        approved = False
        if self.ask and sys.stdin.isatty():
            w("  apply this write? [y/N] ")
            self.out.flush()
            approved = sys.stdin.readline().strip().lower() in ("y", "yes")
        else:
            w("  refused: not a terminal, and --yes was not given\n")
        self.agent.decide(ev.request_id, approved)

    def _notice(self, ev: AgentNotice) -> None:
        mark = {"error": "!!", "warning": "!"}.get(ev.level, "-")
        self.out.write(f"  {mark} {ev.text}\n")
        if ev.level == "error":
            self.failed = True


def run_headless(
    ws: Workspace,
    config: AgentConfig,
    problem: str,
    message: str,
    device: str,
    record: bool = False,
    argv: list[str] | None = None,
    resume: Any = None,
    remote: Any = "workspace",
    engine: Any = None,
) -> int:
    """``ktui agent``: one message and the loop it starts, the transcript on stdout. With ``record`` the session
    is recorded under ``sessions/`` (``ktui.sessions.record``; its id on stderr), ``argv`` its command line.
    ``resume`` (a ``ktui.sessions.resume.ResumePlan``): the session continues a recorded one: the agent starts
    with its chat history, and the events append to its log. ``remote``: where the workers run (``Session``'s
    argument: a ``RemoteConfig``, None for here, or ``"workspace"`` for ``[remote]`` of ``ktui.toml``). ``engine``
    (``ktui.core.engines``, None: the local pool): where the ladders run; the versions of one turn run there together.
    Returns the exit code: 0, 1 when a model request failed, 130 on ctrl+c.

    Raises:
        ktui.core.workers.client.WorkerStartError: the remote cannot be reached or used."""
    session = Session(ws, device, options=LadderOptions(), watch=False, remote=remote, engine=engine)
    recorder = None
    if record:
        from ktui.sessions.record import maybe_record

        recorder, warnings = maybe_record(
            session,
            "agent",
            argv or ["ktui", "agent"],
            model=config.model,
            secret_env=[config.api_key_env or ""],
            resume_dir=resume.folder if resume is not None else None,
        )
        for w in warnings:
            print(f"ktui: {w}", file=sys.stderr)
        if recorder is not None:
            what = "appending to session" if resume is not None else "recording session"
            print(f"ktui: {what} {recorder.id}", file=sys.stderr, flush=True)
    end = "error"
    session.start()
    agent = Agent(
        ws,
        config,
        session.bus,
        run_ladder=session.result_for,
        results=session.results,
        interactive=False,
        run_many=session.results_for,
    )
    if resume is not None:
        resume.apply(agent)
    printer = Printer(agent, ask=config.approve != "auto")
    session.bus.subscribe(printer)
    try:
        agent.send(message, problem)
        end = "done"
    except KeyboardInterrupt:
        agent.stop()
        end = "stopped by ctrl+c"
        return 130
    except BaseException as exc:  # SIGTERM/SIGHUP (``ktui.cli.Signalled``) or a bug: said in the end record
        signum = getattr(exc, "signum", None)
        end = f"stopped by {_signal_name(signum)}" if isinstance(signum, int) else f"error: {type(exc).__name__}"
        raise
    finally:
        session.stop()
        if recorder is not None:
            recorder.close(end)
    return 1 if printer.failed else 0


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
