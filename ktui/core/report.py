"""Ladder results as text: the one place that decides how a result reads, for every front end.

- ``ktui run`` prints :func:`run_header` and then :func:`rung_lines` for each rung as it finishes
  (:func:`run_lines` is the same for a finished result);
- the agent's tool results and automatic rounds send :func:`for_model` to the model;
- the TUI's Details tab draws :func:`details` (text with style names; the widget turns them into Rich text);
- the tree, the Timings tab and ``ktui status`` name a result by :func:`verdict`, and :func:`status_lines` is
  ``ktui status``;
- the chat pane and the headless transcript show :func:`usage_line` after each reply.

Every function is pure: results in, strings out. Nothing here imports Textual, Rich or torch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ktui.core import inside
from ktui.core.figures import compile_of, correctness_of
from ktui.core.results import (
    RUNG_ORDER,
    ErrorInfo,
    LadderResult,
    RungResult,
    Status,
    device_label,
    is_reference_message,
    placement_label,
    standing,
)
from ktui.core.workspace import KernelRef

if TYPE_CHECKING:
    from ktui.core.status import ProblemStatus

CLI_TRACEBACK_LINES = 15  # ``ktui run``: the end of a failed rung's traceback, under its line
CLI_MESSAGE_LINES = 20  # ``ktui run``: the lines of a failed rung's message after its first (a crash's frame and log)
MODEL_TRACEBACK_LINES = 20  # the model gets a little more of it
MODEL_WARNINGS = 6  # warnings per rung sent to the model
MODEL_FAILED_SPECS = 5  # failed correctness specs sent to the model
MODEL_TIMELINE_ROWS = 6  # rows of a trace's timeline sent to the model


def traceback_tail(text: str, lines: int, indent: str = "") -> list[str]:
    """The last ``lines`` lines of ``text`` (trailing blank lines dropped), each prefixed by ``indent``; [] for an
    empty text."""
    tail = text.rstrip().splitlines()[-lines:] if lines > 0 else []
    return [indent + ln for ln in tail]


def message_rest(error: ErrorInfo, lines: int, indent: str = "") -> list[str]:
    """The lines of ``error``'s message after its first (which the rung's line shows): for a worker that died, the
    kernel's frame, the worker's last lines and whether it was restarted. At most ``lines`` of them (the last
    ones: the end of a log is what names the cause), each prefixed by ``indent``; none when the traceback holds
    them all."""
    rest = [ln for ln in error.message.strip().splitlines()[1:] if ln.strip()]
    if rest and error.traceback and all(ln.strip() in error.traceback for ln in rest):
        return []  # the traceback, shown below it, says the same (a compiler's multi-line message, say)
    return [indent + ln for ln in rest[-lines:]] if lines > 0 else []


def is_reference_error(error: ErrorInfo | None) -> bool:
    """True when ``error`` blames the problem's reference, not the version: the reference's ``generate_input``,
    ``ref_kernel``, ``flops`` or ``bytes_moved`` raised, its import failed, or it lacks what ktui needs (the
    worker's ``format_error`` starts those messages with ``reference error``; a rung may put its name first)."""
    return error is not None and is_reference_message(error.message)


def reference_failure(result: LadderResult | None) -> RungResult | None:
    """The failed rung of ``result`` when the reference is at fault (``is_reference_error``), else None."""
    failed = result.failed_rung if result else None
    return failed if failed is not None and is_reference_error(failed.error) else None


def verdict(result: LadderResult | None) -> tuple[str, str]:
    """A finished result in a few characters and its style: ``✓ 1.23x`` (the worst benchmark speedup), ``✓ ok``
    (passed, no speedup: on the CPU), ``✗ correctness`` (the first failed rung), ``! reference`` (the reference
    failed: no verdict on the version), ``◌ needs a GPU`` (run skipped: a CuTeDSL version on a machine without a
    GPU, compiled and dumped but not run), ``◦ compiled`` (only compiled, by ``ktui diff`` or ``--rungs dumps``),
    ``· not run``."""
    if result is None:
        return "· not run", "dim"
    failed = result.failed_rung
    if failed is not None and is_reference_error(failed.error):
        return "! reference", "bold magenta"
    if failed is not None:
        return f"✗ {failed.name}", "bold red"
    run = result.rung("run")
    if run is not None and run.status is Status.SKIPPED:  # a CuTeDSL version on the CPU: not run, not failed
        return "◌ needs a GPU", "yellow"
    if result.rung("correctness") is None:
        return "◦ compiled", "dim"
    worst = result.worst_speedup
    if worst is not None:
        return f"✓ {worst:.2f}x", "bold green"
    return "✓ ok", "green"


VERDICT_STYLES = {"✓": "green", "✗": "bold red", "!": "bold magenta", "◌": "yellow", "◦": "dim", "·": "dim"}
"""The style of a verdict by its mark (``verdict``'s styles; ``✓ 1.23x`` is bold there)."""


def verdict_style(text: str) -> str:
    """The style of a verdict's text as ``verdict`` wrote it (``✗ run`` bold red), for one kept as text (a
    ``LastVerdict``)."""
    return VERDICT_STYLES.get(text[:1], "")


def carried_line(result: LadderResult, stale: str = "") -> str:
    """The line saying a result is another version's run of the same source (``LadderResult.carried_from``); when
    ``stale`` (``core.status.staleness``: the version's files changed since), that the verdict no longer stands."""
    if stale:
        return (
            f"the run of {result.carried_from}, on the source {result.version} had when it was copied: its verdict "
            f"does not stand for {result.version} now, which has not run (r runs it)"
        )
    return (
        f"the run of {result.carried_from}, the same source and reference: its verdict stands for "
        f"{result.version} (r runs {result.version} itself)"
    )


# -- ktui run ----------------------------------------------------------------------------------------------------
def run_header(key: str, device: dict[str, Any]) -> str:
    """The first line of ``ktui run``: ``softmax/v2  device: cpu (interpreter)``."""
    return f"{key}  device: {device_label(device)}"


def rung_lines(r: RungResult) -> list[str]:
    """What ``ktui run`` prints for one finished rung: its line (``[name] ok  summary``); for a failure other than
    correctness whose line shows a summary, the error's first line under it (the cause: ``compile: timed out ...``);
    under a failed correctness line, the other failing specs (``failing_spec_lines``); one line per warning; and
    for a failure other than correctness the rest of the message and the end of its traceback (the correctness
    line already names the spec)."""
    out = [r.line()]
    failed = r.error.one_line() if r.status is Status.FAILED and r.error else ""
    if failed and r.summary and failed not in r.summary and r.name != "correctness":
        out.append(f"    {failed}")  # the line shows the summary: the cause is this (a run whose compile timed out)
    out += inside_lines(r)
    out += failing_spec_lines(r)
    out += [f"    warning: {w}" for w in r.warnings]
    if r.status is Status.FAILED and r.error and (r.name != "correctness" or is_reference_error(r.error)):
        out += message_rest(r.error, CLI_MESSAGE_LINES, "    ")
        out += traceback_tail(r.error.traceback, CLI_TRACEBACK_LINES, "    ")
    if r.status is Status.FAILED and is_reference_error(r.error):
        out.append("    the reference failed, not this version: fix it and save it (its versions run again)")
    return out


FAILING_SPEC_LINES = 8  # ``failing_spec_lines``: at most this many specs under a failed correctness line
FAILING_SPEC_CHARS = 200  # and each spec's reason cut to this many characters (the whole one: --json, Details)


def failing_spec_lines(r: RungResult) -> list[str]:
    """Under a failed correctness line, one line per other failing spec: ``✗ (3, 127, bf16) dist=normal: output out:
    23 of 381 elements ...``, cut to ``FAILING_SPEC_CHARS``, at most ``FAILING_SPEC_LINES`` and how many more. The
    line names the worst case only (new-user trial 21 F2: it showed an ``extreme`` input's NaN while the defect of
    10 of the 11 failing specs, a cancellation on ``normal`` inputs, was only in --json)."""
    if r.name != "correctness" or r.status is not Status.FAILED:
        return []
    specs = [s for s in r.figures.get("specs") or [] if isinstance(s, dict) and s.get("ok") is False]
    lead = next((s for s in specs if s.get("worst_case") and s["worst_case"] in r.summary), None)
    rest = [s for s in specs if s is not lead]
    out = []
    for s in rest[:FAILING_SPEC_LINES]:
        case = str(s.get("worst_case") or s.get("label") or "?")
        reason = " ".join(str(s.get("reason") or "").split())
        if len(reason) > FAILING_SPEC_CHARS:
            reason = reason[: FAILING_SPEC_CHARS - 3].rstrip() + "..."
        out.append(f"    ✗ {case}: {reason}")
    if len(rest) > FAILING_SPEC_LINES:
        more = len(rest) - FAILING_SPEC_LINES
        out.append(f"    ... and {more} more failing specs (every one: --json, specs[].reason)")
    return out


def inside_lines(r: RungResult, timeline_rows: int = 8) -> list[str]:
    """The lines under an ok trace rung (regions, CTAs, critical path, timeline) or an ok profile with a source page
    (its hottest Python lines): ``ktui.core.inside``."""
    if r.status is not Status.OK:
        return []
    if r.name == "trace":
        return inside.trace_lines(r.figures, timeline_rows)
    if r.name == "profile" and r.figures.get("source"):
        return inside.profile_source_lines(r.figures)
    return []


def run_lines(result: LadderResult) -> list[str]:
    """The whole ``ktui run`` output of a finished result: the header, then every rung's lines."""
    out = [run_header(result.key, result.device)]
    for r in result.rungs:
        out += rung_lines(r)
    return out


# -- ktui status ---------------------------------------------------------------------------------------------------
def ago(seconds: float) -> str:
    """``just now``, ``12 s ago``, ``5 min ago``, ``3 h ago``, ``2 days ago``: an age for a human."""
    if seconds < 2:
        return "just now"
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''} ago"
    return f"{int(seconds)} s ago"


def status_lines(problems: Sequence[ProblemStatus], now: float | None = None, whole: bool = False) -> list[str]:
    """``ktui status``: per problem its reference (and the reference's error, when one blames the file on disk),
    per version its verdict, where and how long ago it ran, why it failed (cut to a line, or ``whole``: as ``ktui
    status PROBLEM/VERSION`` shows one version's), ``STALE: <why>`` when the result is not about the files on
    disk, and ``UNVERIFIED: <why>; last verdict ✗ run (5 min ago, STALE: ...)`` when it has no verdict (only
    compiled since); then one line of totals. ``now`` (seconds since the epoch) is for the ages; default: now."""
    from ktui.core.status import short_reason

    now = time.time() if now is None else now
    out: list[str] = []
    counts = {"ok": 0, "failed": 0, "reference": 0, "needs a GPU": 0, "unverified": 0, "not run": 0, "stale": 0}
    kinds: set[str] = set()  # stale, unverified: why versions need a run
    width = max((len(v.verdict) for p in problems for v in p.versions), default=0)
    for p in problems:
        head = f"{p.problem}  ({p.reference})"
        out.append(f"{head}  ! {p.reference_error}" if p.reference_error else head)
        if not p.versions:
            out.append(f"  no versions: add kernels/{p.problem}/v1.py")
        for v in p.versions:
            where = f"{v.device}, {ago(now - v.ran_at)}" if v.ran_at else ""
            line = f"  {v.version:<4} {v.verdict:<{width}}  {where}".rstrip()
            if v.reason and not v.reference_error:
                line += f"  ({v.reason if whole else short_reason(v.reason)})"
            if v.carried_from:  # a copy's verdict is its source version's run
                line += f"  (the run of {v.carried_from}" + (", on the source it had when copied)" if v.stale else ")")
            if v.stale:
                line += f"  STALE: {v.stale}"
            if v.unverified:
                line += f"  UNVERIFIED: {v.unverified}"
            if v.last_verdict and v.unverified:
                when = f", {ago(now - v.last_verdict_at)}" if v.last_verdict_at else ""
                stale = f", STALE: {v.last_verdict_stale}" if v.last_verdict_stale else ""
                line += f"; last verdict {v.last_verdict}{when}{stale}"
            elif v.last_verdict:  # only compiled again on the files it judged: the verdict shown is that one
                when = f" of {ago(now - v.last_verdict_at)}" if v.last_verdict_at else ""
                line += f"  (the verdict{when}; compiled again since, same files)"
            out.append(line)
            kind = "not run" if v.ok is None else "reference" if v.reference_error else "ok" if v.ok else "failed"
            kind = "needs a GPU" if v.needs_gpu and v.ok else kind
            kind = "unverified" if v.unverified and v.ok else kind
            counts[kind] += 1
            again = v.unverified and v.last_verdict  # one only ever compiled is not run at start-up (status.needs_run)
            counts["stale"] += bool(v.stale or again)
            kinds.update(k for k, on in (("stale", v.stale), ("unverified", again)) if on)
    n = sum(counts[k] for k in ("ok", "failed", "reference", "needs a GPU", "unverified", "not run"))
    parts = [f"{counts[k]} {k}" for k in ("ok", "failed", "needs a GPU", "unverified", "not run") if counts[k]]
    if counts["reference"]:
        parts.append(f"{counts['reference']} stopped by a reference error")
    total = f"{n} version{'s' if n != 1 else ''}" + (f": {', '.join(parts)}" if parts else "")
    if counts["stale"]:
        why = " or ".join(k for k in ("stale", "unverified") if k in kinds)
        total += f"; {counts['stale']} to run again, {why} (ktui runs them at start-up; or ktui run KERNEL_FILE)"
    out.append(total)
    return out


# -- the agent ---------------------------------------------------------------------------------------------------
def for_model(result: LadderResult) -> str:
    """The ladder result as the model reads it: a header with the verdict, one line per rung, its first warnings,
    the end of a failed rung's traceback, and the failed correctness specs with their reasons."""
    lines = [
        f"Ladder results for {result.key} ({result.kernel}, sha256 {result.source_sha256[:12]}) on "
        f"{device_label(result.device)}: {_model_verdict(result)}"
    ]
    for r in result.rungs:
        lines.append(r.line())
        lines += inside_lines(r, MODEL_TIMELINE_ROWS)
        lines += [f"  warning: {w}" for w in r.warnings[:MODEL_WARNINGS]]
        if r.status is Status.FAILED and r.error:
            lines += message_rest(r.error, MODEL_TRACEBACK_LINES, "  ")
        if r.status is Status.FAILED and is_reference_error(r.error):
            lines.append("  (the reference failed, not this version: the version has no verdict)")
        if r.status is Status.FAILED and r.error and r.error.traceback:
            lines.append("  traceback (last lines):")
            lines += traceback_tail(r.error.traceback, MODEL_TRACEBACK_LINES, "    ")
        if r.name == "correctness" and r.status is Status.FAILED:
            bad = [s for s in correctness_of(r.figures).get("specs", []) if not s.get("ok")][:MODEL_FAILED_SPECS]
            for s in bad:
                lines.append(f"  spec {s['label']} ({s.get('worst_case', '')}): {s.get('reason', '')}")
    return "\n".join(lines)


def rank(results: Sequence[LadderResult]) -> list[LadderResult]:
    """Versions best first: those whose correctness passed, by their worst-spec speedup
    (``LadderResult.worst_speedup``; none, on the CPU, counts as 0), then those not verified here (they need a GPU:
    ``results.standing``), then the failed ones by how far up the ladder they got; ties keep the given order. A fast
    wrong kernel, or one never checked, never ranks above a correct one."""

    def score(r: LadderResult) -> tuple[int, float, int]:
        failed = r.failed_rung
        reached = RUNG_ORDER.index(failed.name) if failed is not None and failed.name in RUNG_ORDER else len(RUNG_ORDER)
        return (standing(r), r.worst_speedup or 0.0, reached)

    return sorted(results, key=score, reverse=True)


def for_model_ranked(results: Sequence[LadderResult]) -> str:
    """Several versions' results for the model at once: the ranking (``rank``) in one line each, then each
    version's ``for_model`` in that order. One result is its ``for_model`` alone."""
    if len(results) == 1:
        return for_model(results[0])
    ranked = rank(results)
    head = [f"{len(ranked)} versions verified together, ranked (correct versions first, by worst-spec speedup):"]
    for i, r in enumerate(ranked, 1):
        where = placement_label(r.device)
        head.append(f"{i}. {r.key}  {verdict(r)[0]}" + (f"  (ran on {where})" if where else ""))
    return "\n".join(head) + "\n\n" + "\n\n".join(for_model(r) for r in ranked)


def _model_verdict(result: LadderResult) -> str:
    """``all rungs ok``, ``FAILED`` or ``not run here: needs a GPU (compiled and dumped only)``."""
    if not result.ok:
        return "FAILED"
    run = result.rung("run")
    if run is not None and run.status is Status.SKIPPED:
        return "not run here: needs a GPU (compiled and dumped only, no correctness verdict)"
    return "all rungs ok"


# -- the Details tab ---------------------------------------------------------------------------------------------
Segment = tuple[str, str]  # (text, style name: "" for plain, else a Rich style such as "bold red")


def details(
    kernel: KernelRef,
    result: LadderResult | None,
    stale: str = "",
    unverified: str = "",
    running: bool = False,
    live: Sequence[RungResult] = (),
) -> list[Segment]:
    """The Details tab of ``kernel``: its key and file, then (once it ran) why the result is stale (``stale``, from
    ``core.status.staleness``) or unverified (``unverified``, ``core.status.unverified``) with the last verdict it
    kept, device, source and reference hashes and the run's time, the run's base seed (``ktui run --seed``), each
    compile launch, every warning, and the
    failed rung with its whole message and traceback. Before its first result: how to run it. While it runs
    (``running``): that it runs, the rungs of this run finished so far (``live``), a failed one's whole message at
    once, and that what follows is the last finished run's.

    Returns:
        (text, style) pieces in order; each ends with a newline where a line ends.
    """
    out: list[Segment] = [(kernel.key, "bold"), (f"  {kernel.path.relative_to(kernel.root)}\n", "")]
    if running:
        done = ", ".join(f"{r.name} {r.status.value}" for r in live)
        out.append((f"Running now (x cancels): {done or 'no rung finished yet'}.\n", "bold yellow"))
        failed = next((r for r in live if r.status is Status.FAILED and r.error), None)
        if failed is not None and failed.error is not None:
            out += _failure(failed, failed.error)
        if result is None:
            return out
        out.append(("\nThe last finished run, until this one ends:\n", "dim"))
    if result is None:
        out.append(
            ("Not run yet: press r to run it, a to run every version of its problem, or save the file.\n", "dim")
        )
        return out
    if stale:
        out.append((f"STALE: {stale}: this result is about code no longer on disk (r runs it again)\n", "bold yellow"))
    if unverified:
        out.append((f"UNVERIFIED: {unverified} (r runs it)\n", "bold yellow"))
    last = result.last_verdict if not result.has_verdict else None
    if last is not None:
        what = f" {last.failed_rung}: {last.summary}" if last.failed_rung and last.summary else ""
        out.append((f"last verdict: {last.verdict}{what} (source {last.source_sha256[:12]})\n", "yellow"))
    if result.carried_from:
        out.append((carried_line(result, stale) + "\n", "yellow" if stale else "cyan"))
    out.append(
        (
            f"device: {device_label(result.device)}   source sha256: {result.source_sha256[:12]}   "
            f"reference: {result.reference_sha256[:12]}   {result.seconds:.1f} s\n",
            "",
        )
    )
    corr = result.rung("correctness")
    seed = corr.figures.get("seed") if corr is not None else None
    if isinstance(seed, int):  # the per-case seeds a failure names are this plus an offset (new-user trial 21, F13)
        out.append((f"seed {seed}: ktui run {kernel.key} --seed {seed} draws these cases again\n", "dim"))
    comp = result.rung("compile")
    for rec in compile_of(comp.figures).get("launches", []) if comp else []:
        sig = ", ".join(f"{a}:{v}" for a, v in (rec.get("signature") or {}).items())
        tuning = f" warps={rec.get('num_warps')} stages={rec.get('num_stages')}" if rec.get("num_warps") else ""
        out.append((f"  {rec.get('language')} {rec.get('kernel')} [{rec.get('target')}]{tuning}  {sig}\n", "cyan"))
    for r in result.rungs:
        out += [(f"warning [{r.name}]: {w}\n", "yellow") for w in r.warnings]
    failed = result.failed_rung
    if failed and failed.error:
        out += _failure(failed, failed.error)
    return out


def _failure(failed: RungResult, error: ErrorInfo) -> list[Segment]:
    """A failed rung's whole message and traceback, for Details."""
    out: list[Segment] = []
    if is_reference_error(error):
        out.append(("\nthe reference failed, not this version: fix it and save it\n", "bold magenta"))
    out.append((f"\n[{failed.name}] FAILED  {error.one_line()}\n", "bold red"))
    rest = message_rest(error, 200)
    if rest:
        out.append(("\n".join(rest) + "\n", ""))
    if error.traceback:
        out.append((error.traceback.rstrip() + "\n", ""))
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
