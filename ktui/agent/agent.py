"""The verifiable loop with a human in charge: the model writes versions, the ladder judges them, the results go
back to the model, for a bounded number of rounds.

``Agent.send(text)`` runs one exchange on the calling thread (the TUI runs it on a worker thread, ``ktui agent``
on the main one) and publishes everything on the event bus: streamed text, tool calls, approval requests, retries,
usage. ``stop()`` (Esc) ends it at the next chunk; ``decide()`` answers an approval request.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ktui.agent import llm
from ktui.agent.config import SETUP_HINT, AgentConfig
from ktui.agent.events import (
    AgentNotice,
    AgentState,
    ApprovalDecided,
    ApprovalRequest,
    ChatDelta,
    ChatMessage,
    ChatReplyDone,
    ChatReplyReset,
    ModelToolCall,
    ToolCall,
    ToolResult,
)
from ktui.agent.prompts import system_prompt
from ktui.agent.tools import TOOLS, PendingWrite, ToolError, Workbench, results_for_model, tool_names
from ktui.core import report
from ktui.core.events import EventBus
from ktui.core.results import RUNG_ORDER, LadderResult, expand_rungs, standing
from ktui.core.workspace import KERNELS, KernelRef, Workspace, WorkspaceError

MAX_TOOL_CALLS_PER_EXCHANGE = 40
CHARS_PER_TOKEN = 3.5  # conservative estimate for code and English (cl100k averages ~4): trimming stays offline


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """An offline over-estimate of the prompt's tokens: characters / 3.5 plus 8 per message."""
    return sum(int(len(json.dumps(m)) / CHARS_PER_TOKEN) + 8 for m in messages)


def trim(
    system: dict[str, Any], history: list[dict[str, Any]], budget: int, keep_last: int = 1
) -> list[dict[str, Any]]:
    """The messages to send: the system prompt, then as many of the latest messages as fit in ``budget`` tokens.

    Never drops the system prompt or the last ``keep_last`` message groups (the latest human message or ladder
    results). Messages go in groups (an assistant message with tool calls, and the tool results after it) so that no
    tool result loses its call.
    """
    groups: list[list[dict[str, Any]]] = []
    for m in history:
        if m["role"] == "tool" and groups:
            groups[-1].append(m)
        else:
            groups.append([m])
    kept: list[list[dict[str, Any]]] = []
    used = estimate_tokens([system])
    for i, g in enumerate(reversed(groups)):
        cost = estimate_tokens(g)
        if i >= keep_last and used + cost > budget:
            break
        kept.append(g)
        used += cost
    out = [system] + [m for g in reversed(kept) for m in g]
    dropped = len(groups) - len(kept)
    if dropped:
        out.insert(
            1,
            {"role": "user", "content": f"({dropped} earlier message groups were dropped to fit the context window.)"},
        )
    return out


def best_version(ws: Workspace, problem: str, results: dict[str, LadderResult]) -> KernelRef | None:
    """The best version of ``problem`` by ``results`` (``problem/version`` -> latest result): the one whose
    correctness passed with the highest worst benchmark speedup (a pass without a speedup, as on the CPU, counts as
    0; the later version wins a tie); one not verified here (it needs a GPU, ``results.standing``) only when none
    passed; with none of either, the latest version; None when the problem has no version."""
    versions = ws.versions(problem)
    passing = [(standing(r), r.worst_speedup or 0.0, i, k) for i, k in enumerate(versions) if (r := results.get(k.key))]
    passing = [t for t in passing if t[0] > 0]
    if passing:
        return max(passing, key=lambda t: t[:3])[3]
    return versions[-1] if versions else None


class Agent:
    """One conversation about one problem.

    Args:
        workspace: where versions are written.
        config: model and loop settings (``max_rounds``, ``approve``).
        bus: where every step is published.
        run_ladder: runs (or waits for) the ladder of a version and returns its result; called with ``rungs=``
            (a tuple of rung names) when the model asks for some rungs only (a trace, a profile).
        run_many: the same for the versions written in one turn, all sent at once, ``(kernel, result)`` as each
            finishes (``Session.results_for``: with the Ray engine each runs on its own GPU); default:
            ``run_ladder`` on each in turn. Their results go back to the model together, ranked
            (``report.for_model_ranked``).
        results: the latest result of each version, by ``problem/version`` (for the system prompt).
        base_of: the version a new version of a problem derives from when the model has read or written none of
            that problem in this conversation (the TUI: the selected version); None, or a None answer: the best
            version (``best_version``). The approval diff of a new file is against it.
    """

    def __init__(
        self,
        workspace: Workspace,
        config: AgentConfig,
        bus: EventBus,
        run_ladder: Callable[..., LadderResult],
        results: Callable[[], dict[str, LadderResult]] | None = None,
        interactive: bool = True,
        base_of: Callable[[str], KernelRef | None] | None = None,
        run_many: Callable[[list[KernelRef]], Iterable[tuple[KernelRef, LadderResult]]] | None = None,
    ):
        self.ws = workspace
        self.config = config
        self.bus = bus
        self.run_ladder = run_ladder
        self._run_all = run_many or (lambda kernels: ((k, self.run_ladder(k)) for k in kernels))
        self.results = results or (lambda: {})
        self.tools = Workbench(workspace)  # the tools the model calls (files, context search, writes)
        self.interactive = interactive  # a chat to come back to (the TUI), or one message (ktui agent)
        self.base_of = base_of
        self._seen: dict[str, KernelRef] = {}  # problem -> the version the model last read or wrote
        self.history: list[dict[str, Any]] = []
        self.session_tokens = 0
        self.session_cost: float | None = None  # None until litellm prices a turn (it has no price for some models)
        self._cancel = threading.Event()
        self._ids = itertools.count(1)
        self._decisions: dict[int, tuple[threading.Event, list[bool]]] = {}
        self._lock = threading.Lock()

    # -- control -------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the reply under way and the loop (pending approvals count as refused)."""
        self._cancel.set()
        with self._lock:
            for ev, box in self._decisions.values():
                box.append(False)
                ev.set()

    def decide(self, request_id: int, approved: bool) -> None:
        """The human's answer to an ``ApprovalRequest``."""
        with self._lock:
            pending = self._decisions.get(request_id)
        if pending:
            pending[1].append(approved)
            pending[0].set()
            self.bus.publish(ApprovalDecided(request_id=request_id, approved=approved))

    # -- the exchange --------------------------------------------------------------------------------------------
    def send(self, text: str, problem: str) -> None:
        """The human's message, then model turns, tools and ladder rounds until the model stops, the rounds run
        out, a request fails for good, or ``stop()``. Never raises for a model or network failure: it says so on
        the bus, and the message stays in the history (nothing the human typed is lost)."""
        self._cancel.clear()
        self.history.append({"role": "user", "content": text})
        self.bus.publish(ChatMessage(role="user", text=text))
        if not self.config.configured:
            self.bus.publish(AgentNotice(level="warning", text=SETUP_HINT))
            return
        rounds = 0
        tool_calls = 0
        written: dict[str, KernelRef] = {}
        try:
            while True:
                turn = self._turn(problem)
                if turn is None:
                    return
                self.history.append(turn.message())
                for call in turn.tool_calls:  # (recorded whole: a resumed session gives them back to the model)
                    self.bus.publish(ModelToolCall(call_id=call["id"], name=call["name"], arguments=call["arguments"]))
                if turn.tool_calls:
                    for call in turn.tool_calls:
                        tool_calls += 1
                        if tool_calls > MAX_TOOL_CALLS_PER_EXCHANGE:
                            content = "refused: too many tool calls in one exchange; end your turn"
                        else:
                            content, k = self._tool(call)
                            if k is not None:
                                written[k.key] = k
                        self.history.append({"role": "tool", "tool_call_id": call["id"], "content": content})
                        self.bus.publish(ToolResult(call_id=call["id"], content=content))
                    continue
                if not written:
                    return
                if rounds >= self.config.max_rounds:
                    self.bus.publish(
                        AgentNotice(
                            level="info",
                            text=f"{rounds} automatic round(s) done (max_rounds={self.config.max_rounds}): over to you",
                        )
                    )
                    return
                rounds += 1
                self.bus.publish(AgentState(state="ladder", detail=", ".join(written)))
                results = []
                for _, result in self._run_all(list(written.values())):
                    if self._cancel.is_set():
                        raise llm.Cancelled()
                    results.append(result)
                written = {}
                message = report.for_model_ranked(results) if results else "(no version was run: cancelled)"
                message += f"\n\n(automatic round {rounds} of {self.config.max_rounds})"
                self.history.append({"role": "user", "content": message})
                self.bus.publish(ChatMessage(role="results", text=message))
        except llm.Cancelled:
            self.bus.publish(AgentNotice(level="info", text="stopped"))
        finally:
            self.bus.publish(AgentState(state="idle"))

    def _turn(self, problem: str) -> llm.Turn | None:
        """One model reply, retried with backoff on failures that retrying can fix."""
        system = {"role": "system", "content": system_prompt(self.ws, problem, self.results())}
        budget = llm.context_window(self.config) - self.config.max_tokens - 512
        for attempt in range(1, self.config.retries + 2):
            messages = trim(system, self.history, budget)
            self.bus.publish(AgentState(state="thinking", detail=self.config.model or ""))
            streamed: list[str] = []

            def on_delta(text: str) -> None:
                streamed.append(text)
                self.bus.publish(ChatDelta(text=text))

            try:
                turn = llm.stream_turn(self.config, messages, TOOLS, on_delta, self._cancel)
            except llm.LLMError as err:
                if streamed:
                    self.bus.publish(ChatReplyReset())
                if err.retry and attempt <= self.config.retries:
                    wait = llm.backoff_s(attempt, err)
                    self.bus.publish(
                        AgentNotice(
                            level="warning",
                            text=f"{err}: retrying in {wait:g} s (attempt {attempt + 1} of {self.config.retries + 1})",
                        )
                    )
                    llm.sleep_unless_cancelled(wait, self._cancel)
                    continue
                hint = (
                    " (your message is kept: send another message to try again)"
                    if err.retry and self.interactive
                    else ""
                )
                self.bus.publish(AgentNotice(level="error", text=f"{err}{hint}"))
                return None
            self.session_tokens += turn.prompt_tokens + turn.completion_tokens
            if turn.cost_usd is not None:
                self.session_cost = (self.session_cost or 0.0) + turn.cost_usd
            self.bus.publish(
                ChatReplyDone(
                    text=turn.content,
                    prompt_tokens=turn.prompt_tokens,
                    completion_tokens=turn.completion_tokens,
                    cost_usd=turn.cost_usd,
                    session_tokens=self.session_tokens,
                    session_cost_usd=self.session_cost,
                )
            )
            return turn
        return None

    # -- tools ---------------------------------------------------------------------------------------------------
    def _tool(self, call: dict[str, Any]) -> tuple[str, KernelRef | None]:
        """Run one tool call; returns (the content for the model, the version written or None)."""
        name, cid = call["name"], call["id"]
        if name not in tool_names():
            msg = f"unknown tool {name!r}; the tools are: {', '.join(tool_names())}"
            self.bus.publish(ToolCall(call_id=cid, name=name, summary="", state="error", detail=msg))
            return f"error: {msg}", None
        try:
            args = llm.parse_arguments(call["arguments"])
        except ValueError as exc:
            self.bus.publish(ToolCall(call_id=cid, name=name, summary="", state="error", detail=str(exc)))
            return f"error: {exc}", None
        summary = ", ".join(
            f"{k}={v!r}" if len(repr(v)) < 40 else f"{k}=<{len(str(v))} chars>" for k, v in args.items()
        )
        self.bus.publish(ToolCall(call_id=cid, name=name, summary=summary, state="running"))
        self.bus.publish(AgentState(state="tool", detail=name))
        try:
            if name == "write_kernel":
                return self._write(cid, args)
            if name == "run_ladder":
                k = self._kernel(args)
                rungs = self._rungs(args.get("rungs"))
                self.bus.publish(AgentState(state="ladder", detail=k.key))
                out = results_for_model(self.run_ladder(k, rungs=rungs) if rungs else self.run_ladder(k))
            elif name == "list_files":
                out = self.tools.list_files(args.get("path", "."))
            elif name == "read_file":
                out = self.tools.read_file(args["path"], args.get("start_line"), args.get("end_line"))
                self._note_read(args["path"])
            elif name == "read_dump":
                out = self.tools.read_dump(args["problem"], args["version"], args.get("stage", "summary"))
            else:
                out = self.tools.search_context(args["query"], int(args.get("max_results", 20)))
        except ToolError as exc:
            self.bus.publish(ToolCall(call_id=cid, name=name, summary=summary, state="error", detail=str(exc)))
            return f"error: {exc}", None
        except (KeyError, TypeError) as exc:
            msg = f"missing or malformed argument: {exc}"
            self.bus.publish(ToolCall(call_id=cid, name=name, summary=summary, state="error", detail=msg))
            return f"error: {msg}", None
        self.bus.publish(ToolCall(call_id=cid, name=name, summary=summary, state="done"))
        return out, None

    @staticmethod
    def _rungs(value: Any) -> tuple[str, ...]:
        """The rungs the model asked for (``run_ladder``'s ``rungs``), with what they need; () for the default ladder.

        Raises:
            ToolError: not a list of rung names.
        """
        if value is None or value == []:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ToolError(f"rungs must be a list of rung names ({', '.join(RUNG_ORDER)}), not {value!r}")
        try:
            return expand_rungs(value)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    def _kernel(self, args: dict[str, Any]) -> KernelRef:
        problem, version = args["problem"], args["version"]
        if problem not in self.ws.problems():
            raise ToolError(f"unknown problem {problem!r}")
        k = KernelRef(problem, str(version), self.ws.root)
        if version not in [v.version for v in self.ws.versions(problem)]:
            raise ToolError(f"no version {version!r} of {problem}")
        return k

    def _note_read(self, rel: str) -> None:
        """Remember a version file the model read (``kernels/<problem>/<version>.py``): a new version of that
        problem derives from it."""
        try:
            k = self.ws.kernel(self.tools.resolve(rel))
        except (ToolError, WorkspaceError):  # not a version: a reference, a context document
            return
        if k in self.ws.versions(k.problem):  # (not a helper module, _common.py)
            self._seen[k.problem] = k

    def derived_from(self, problem: str) -> KernelRef | None:
        """The version a new version of ``problem`` derives from: the one the model last read or wrote in this
        conversation, else ``base_of``'s answer (the TUI's selection), else the best version (``best_version``)."""
        seen = self._seen.get(problem)
        if seen is not None and seen.path.is_file():
            return seen
        chosen = self.base_of(problem) if self.base_of else None
        if chosen is not None and chosen.problem == problem and chosen.path.is_file():
            return chosen
        return best_version(self.ws, problem, self.results())

    def _write(self, cid: str, args: dict[str, Any]) -> tuple[str, KernelRef | None]:
        problem = args.get("problem")
        base = self.derived_from(problem) if isinstance(problem, str) and problem in self.ws.problems() else None
        w: PendingWrite = self.tools.prepare_write(problem, args.get("source"), args.get("version"), base)
        if self.config.approve != "auto" and not self._approved(w):
            self.bus.publish(
                ToolCall(
                    call_id=cid, name="write_kernel", summary=w.kernel.key, state="error", detail="refused by the human"
                )
            )
            return (
                f"the human refused this write to {w.kernel.key}; ask what they want, or propose something else"
            ), None
        self.tools.apply_write(w)
        self._seen[w.kernel.problem] = w.kernel  # the model knows what it wrote: its next version derives from it
        self.bus.publish(
            ToolCall(
                call_id=cid,
                name="write_kernel",
                summary=w.kernel.key,
                state="done",
                detail=f"wrote {w.kernel.path.relative_to(self.ws.root)}",
            )
        )
        return (
            f"wrote {w.kernel.path.relative_to(self.ws.root)}; the ladder runs it and its results come back "
            "when you end your turn"
        ), w.kernel

    def _approved(self, w: PendingWrite) -> bool:
        rid = next(self._ids)
        ev = threading.Event()
        box: list[bool] = []
        with self._lock:
            self._decisions[rid] = (ev, box)
        self.bus.publish(AgentState(state="approval", detail=w.kernel.key))
        self.bus.publish(
            ApprovalRequest(
                request_id=rid,
                path=str(w.kernel.path.relative_to(self.ws.root)),
                diff=w.diff,
                new_file=w.new_file,
                base=f"{KERNELS}/{w.base.problem}/{w.base.version}.py" if w.base is not None else "",
                added=w.added,
                removed=w.removed,
            )
        )
        ev.wait()
        with self._lock:
            self._decisions.pop(rid, None)
        if self._cancel.is_set():
            raise llm.Cancelled()
        return bool(box and box[0])
