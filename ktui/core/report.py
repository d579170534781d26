"""Ladder results as text: the one place that decides how a result reads, for every front end.

- ``ktui run`` prints :func:`run_header` and then :func:`rung_lines` for each rung as it finishes
  (:func:`run_lines` is the same for a finished result);
- the agent's tool results and automatic rounds send :func:`for_model` to the model;
- the TUI's Details tab draws :func:`details` (text with style names; the widget turns them into Rich text);
- the chat pane and the headless transcript show :func:`usage_line` after each reply.

Every function is pure: results in, strings out. Nothing here imports Textual, Rich or torch.
"""

from __future__ import annotations

from typing import Any, Protocol

from ktui.core.figures import compile_of, correctness_of
from ktui.core.results import LadderResult, RungResult, Status, device_label
from ktui.core.workspace import KernelRef

CLI_TRACEBACK_LINES = 15  # ``ktui run``: the end of a failed rung's traceback, under its line
MODEL_TRACEBACK_LINES = 20  # the model gets a little more of it
MODEL_WARNINGS = 6  # warnings per rung sent to the model
MODEL_FAILED_SPECS = 5  # failed correctness specs sent to the model


def traceback_tail(text: str, lines: int, indent: str = "") -> list[str]:
    """The last ``lines`` lines of ``text`` (trailing blank lines dropped), each prefixed by ``indent``; [] for an
    empty text."""
    tail = text.rstrip().splitlines()[-lines:] if lines > 0 else []
    return [indent + ln for ln in tail]


# -- ktui run ----------------------------------------------------------------------------------------------------
def run_header(key: str, device: dict[str, Any]) -> str:
    """The first line of ``ktui run``: ``softmax/v2  device: cpu (interpreter)``."""
    return f"{key}  device: {device_label(device)}"


def rung_lines(r: RungResult) -> list[str]:
    """What ``ktui run`` prints for one finished rung: its line (``[name] ok  summary``), one line per warning, and
    for a failure other than correctness the end of its traceback (the correctness line already names the spec)."""
    out = [r.line()]
    out += [f"    warning: {w}" for w in r.warnings]
    if r.status is Status.FAILED and r.error and r.error.traceback and r.name != "correctness":
        out += traceback_tail(r.error.traceback, CLI_TRACEBACK_LINES, "    ")
    return out


def run_lines(result: LadderResult) -> list[str]:
    """The whole ``ktui run`` output of a finished result: the header, then every rung's lines."""
    out = [run_header(result.key, result.device)]
    for r in result.rungs:
        out += rung_lines(r)
    return out


# -- the agent ---------------------------------------------------------------------------------------------------
def for_model(result: LadderResult) -> str:
    """The ladder result as the model reads it: a header with the verdict, one line per rung, its first warnings,
    the end of a failed rung's traceback, and the failed correctness specs with their reasons."""
    lines = [
        f"Ladder results for {result.key} ({result.kernel}, sha256 {result.source_sha256[:12]}) on "
        f"{device_label(result.device)}: {'all rungs ok' if result.ok else 'FAILED'}"
    ]
    for r in result.rungs:
        lines.append(r.line())
        lines += [f"  warning: {w}" for w in r.warnings[:MODEL_WARNINGS]]
        if r.status is Status.FAILED and r.error and r.error.traceback:
            lines.append("  traceback (last lines):")
            lines += traceback_tail(r.error.traceback, MODEL_TRACEBACK_LINES, "    ")
        if r.name == "correctness" and r.status is Status.FAILED:
            bad = [s for s in correctness_of(r.figures).get("specs", []) if not s.get("ok")][:MODEL_FAILED_SPECS]
            for s in bad:
                lines.append(f"  spec {s['label']} ({s.get('worst_case', '')}): {s.get('reason', '')}")
    return "\n".join(lines)


# -- the Details tab ---------------------------------------------------------------------------------------------
Segment = tuple[str, str]  # (text, style name: "" for plain, else a Rich style such as "bold red")


def details(kernel: KernelRef, result: LadderResult | None) -> list[Segment]:
    """The Details tab of ``kernel``: its key and file, then (once it ran) device, source and reference hashes and
    the run's time, each compile launch, every warning, and the failed rung with its whole traceback.

    Returns:
        (text, style) pieces in order; each ends with a newline where a line ends.
    """
    out: list[Segment] = [(kernel.key, "bold"), (f"  {kernel.path.relative_to(kernel.root)}\n", "")]
    if result is None:
        out.append(("Not run yet: press r to run it, or save the file.\n", "dim"))
        return out
    out.append(
        (
            f"device: {device_label(result.device)}   source sha256: {result.source_sha256[:12]}   "
            f"reference: {result.reference_sha256[:12]}   {result.seconds:.1f} s\n",
            "",
        )
    )
    comp = result.rung("compile")
    for rec in compile_of(comp.figures).get("launches", []) if comp else []:
        sig = ", ".join(f"{a}:{v}" for a, v in (rec.get("signature") or {}).items())
        tuning = f" warps={rec.get('num_warps')} stages={rec.get('num_stages')}" if rec.get("num_warps") else ""
        out.append((f"  {rec.get('language')} {rec.get('kernel')} [{rec.get('target')}]{tuning}  {sig}\n", "cyan"))
    for r in result.rungs:
        out += [(f"warning [{r.name}]: {w}\n", "yellow") for w in r.warnings]
    failed = result.failed_rung
    if failed and failed.error:
        out.append((f"\n[{failed.name}] FAILED  {failed.error.one_line()}\n", "bold red"))
        if failed.error.traceback:
            out.append((failed.error.traceback.rstrip() + "\n", ""))
    return out


# -- the chat ----------------------------------------------------------------------------------------------------
class Usage(Protocol):
    """What a finished model reply reports (the agent's reply-done event has these fields; read-only here, so a
    frozen dataclass fits)."""

    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def session_tokens(self) -> int: ...
    @property
    def session_cost_usd(self) -> float | None: ...


def cost(usd: float | None) -> str:
    """``$0.0123``, or ``cost n/a`` when litellm has no price for the model (never an invented figure)."""
    return f"${usd:.4f}" if usd is not None else "cost n/a"


def session_usage(u: Usage) -> str:
    """``session 1290 tokens, $0.0123``: the whole session so far."""
    return f"session {u.session_tokens} tokens, {cost(u.session_cost_usd)}"


def usage_line(u: Usage) -> str:
    """``1234 in + 56 out tokens, $0.0042; session 1290 tokens, $0.0123``: one reply's tokens and cost, then the
    session's."""
    return f"{u.prompt_tokens} in + {u.completion_tokens} out tokens, {cost(u.cost_usd)}; {session_usage(u)}"
