"""``ktui agent``: the loop without the TUI, its transcript printed as it happens."""

from __future__ import annotations

import sys
from typing import TextIO

from ktui.agent.agent import Agent
from ktui.agent.config import AgentConfig
from ktui.core.events import (AgentNotice, ApprovalRequest, ChatDelta, ChatMessage, ChatReplyDone, ChatReplyReset, Event,
                         ToolCallEvent)
from ktui.core.ladder import LadderOptions
from ktui.core.session import Session
from ktui.core.workspace import Workspace


def format_usage(ev: ChatReplyDone) -> str:
    cost = f"${ev.cost_usd:.4f}" if ev.cost_usd is not None else "cost n/a"
    total = f"${ev.session_cost_usd:.4f}" if ev.session_cost_usd is not None else "cost n/a"
    return (f"[{ev.prompt_tokens} in + {ev.completion_tokens} out tokens, {cost}; session {ev.session_tokens} "
            f"tokens, {total}]")


class Printer:
    """Writes the transcript: the human's message, the reply as it streams, tool calls, ladder results, notices;
    asks y/n on the terminal for each write unless the agent applies them itself (``--yes``)."""

    def __init__(self, agent: Agent, out: TextIO = sys.stdout, ask: bool = True):
        self.agent = agent
        self.out = out
        self.ask = ask
        self.failed = False
        self._open = False

    def __call__(self, ev: Event) -> None:
        w = self.out.write
        if isinstance(ev, ChatDelta):
            if not self._open:
                w("assistant: ")
                self._open = True
            w(ev.text)
        elif isinstance(ev, ChatReplyDone):
            if self._open:
                w("\n")
            self._open = False
            w(f"  {format_usage(ev)}\n")
        elif isinstance(ev, ChatReplyReset):
            w("\n  (the reply above broke off; asking again)\n")
            self._open = False
        elif isinstance(ev, ChatMessage):
            if ev.role == "user":
                w(f"> {ev.text}\n")
            elif ev.role == "results":
                w("\n".join("  | " + ln for ln in ev.text.splitlines()) + "\n")
        elif isinstance(ev, ToolCallEvent):
            if ev.state != "running":
                w(f"  [{ev.name}{'(' + ev.summary + ')' if ev.summary else ''}] {ev.state}"
                  f"{': ' + ev.detail if ev.detail else ''}\n")
        elif isinstance(ev, ApprovalRequest):
            w(f"  write {ev.path}{' (new file)' if ev.new_file else ''}:\n")
            w("\n".join("    " + ln for ln in ev.diff.splitlines()) + "\n")
            approved = False
            if self.ask and sys.stdin.isatty():
                w("  apply this write? [y/N] ")
                self.out.flush()
                approved = sys.stdin.readline().strip().lower() in ("y", "yes")
            else:
                w("  refused: not a terminal, and --yes was not given\n")
            self.agent.decide(ev.request_id, approved)
        elif isinstance(ev, AgentNotice):
            mark = {"error": "!!", "warning": "!"}.get(ev.level, "-")
            w(f"  {mark} {ev.text}\n")
            if ev.level == "error":
                self.failed = True
        self.out.flush()


def run_headless(ws: Workspace, config: AgentConfig, problem: str, message: str, device: str) -> int:
    session = Session(ws, device, options=LadderOptions(), watch=False)
    session.start()
    agent = Agent(ws, config, session.bus, run_ladder=session.result_for, results=session.results,
                  interactive=False)
    printer = Printer(agent, ask=config.approve != "auto")
    session.bus.subscribe(printer)
    try:
        agent.send(message, problem)
    except KeyboardInterrupt:
        agent.stop()
        return 130
    finally:
        session.stop()
    return 1 if printer.failed else 0
