"""The ``run`` rung: the candidate calls ``custom_kernel`` on every planned case and writes each output to
``ctx.out_dir`` for the judge.

Figures: ``calls`` (cases executed), ``first_call_s`` and ``total_s`` (seconds, the first call includes the JIT),
``seeds``, ``tampered`` (functions the version patched in its worker). A kernel that raises fails the rung with its
exception (``RemoteError``); one that crashes or hangs the worker fails it with how the process died
(``WorkerCrashed``, ``WorkerTimeout``). A failure here stops the ladder.
"""

from __future__ import annotations

from ktui.core.figures import RunFigures
from ktui.core.ladder.context import RunContext, RungFailed
from ktui.core.results import ErrorInfo, RungResult, Status, fmt
from ktui.protocol import Case, ExecuteReply, ExecuteRequest, OutputLeaf


def run(ctx: RunContext) -> RungResult:
    """Execute ``ctx.cases`` in the candidate; leaves ``ctx.executed`` and ``ctx.tampered`` for later rungs.

    Raises:
        RungFailed: compile did not plan the cases.
    """
    if ctx.cases is None or ctx.problem is None:
        raise RungFailed(ErrorInfo("RuntimeError", "run needs compile first"))
    params: ExecuteRequest = {
        **ctx.sources(),
        "cases": ctx.cases,
        "out_dir": str(ctx.out_dir),
        "expected": expected_outputs(ctx) or [],
    }
    t, on_progress = ctx.options.timeouts["run"], ctx.progress("run")
    res = ctx.candidate.execute(params, timeout_s=t, on_progress=on_progress)
    ctx.executed = res["cases"]
    ctx.tampered = list(res.get("tampered", []))
    return run_result(res, ctx.cases, len(ctx.problem["tests"]))


def expected_outputs(ctx: RunContext) -> list[list[OutputLeaf]] | None:
    """The reference's output leaves (path, kind, dtype, shape) of the planned cases, in order, from the judge's
    prepare (started by compile, awaited here: it ran while the version compiled): with them the candidate writes
    no bytes of an output whose structure, dtype or shape is wrong, so a wrong-shaped huge output fails at once
    instead of being materialized. None when there is no prepare or it failed (correctness reports why)."""
    if ctx.prepare is None:
        return None
    try:
        reply = ctx.prepare.result(timeout=ctx.options.timeouts["correctness"])
    except Exception:
        return None
    return [c["expected"] for c in reply["cases"]]


def run_result(res: ExecuteReply, planned: list[Case], n_specs: int) -> RungResult:
    """Fold the candidate's ``execute`` reply: ``N cases ok on S specs, first X s, total Y s``, with warnings for
    threads the kernel left running and for functions it patched."""
    executed = res["cases"]
    tampered = list(res.get("tampered", []))
    secs = [c["seconds"] for c in executed if "seconds" in c]
    summary = (
        f"{len(executed)} cases ok on {n_specs} specs, first {fmt(secs[0])} s, total {fmt(sum(secs))} s"
        if secs
        else "no calls"
    )
    warnings = []
    if res.get("threads_left"):
        warnings.append(
            f"{res['threads_left']} thread(s) the kernel started were still running after the calls "
            "(work after custom_kernel returned is not checked)"
        )
    if tampered:
        warnings.append(
            f"this version patched {', '.join(tampered[:5])} in its worker (replaced after "
            "every ladder: no other version runs there)"
        )
    return RungResult(
        "run",
        Status.OK,
        summary=summary,
        warnings=warnings,
        figures=dict(
            RunFigures(
                calls=len(executed),
                first_call_s=secs[0] if secs else None,
                total_s=sum(secs),
                seeds=sorted({c["seed"] for c in planned}),
                tampered=tampered,
            )
        ),
    )
