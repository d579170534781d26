"""The ``run`` rung: the candidate calls ``custom_kernel`` on every planned case and writes each output to
``ctx.out_dir`` for the judge.

Figures: ``calls`` (cases executed), ``first_call_s`` and ``total_s`` (seconds, the first call includes the JIT),
``seeds``, ``tampered`` (functions the version patched in its worker). A kernel that raises fails the rung with its
exception (``RemoteError``); one that crashes or hangs the worker fails it with how the process died
(``WorkerCrashed``, ``WorkerTimeout``). A failure here stops the ladder.
"""

from __future__ import annotations

from ktui.core.ladder.context import RunContext, RungFailed
from ktui.core.results import ErrorInfo, RungResult, Status, fmt
from ktui.protocol import Case, ExecuteReply, ExecuteRequest


def run(ctx: RunContext) -> RungResult:
    """Execute ``ctx.cases`` in the candidate; leaves ``ctx.executed`` and ``ctx.tampered`` for later rungs.

    Raises:
        RungFailed: compile did not plan the cases.
    """
    if ctx.cases is None or ctx.problem is None:
        raise RungFailed(ErrorInfo("RuntimeError", "run needs compile first"))
    params: ExecuteRequest = {**ctx.sources(), "cases": ctx.cases, "out_dir": str(ctx.out_dir)}
    t, on_progress = ctx.options.timeouts["run"], ctx.progress("run")
    res = ctx.candidate.execute(params, timeout_s=t, on_progress=on_progress)
    ctx.executed = res["cases"]
    ctx.tampered = list(res.get("tampered", []))
    return run_result(res, ctx.cases, len(ctx.problem["tests"]))


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
        figures={
            "calls": len(executed),
            "first_call_s": secs[0] if secs else None,
            "total_s": sum(secs),
            "seeds": sorted({c["seed"] for c in planned}),
            "tampered": tampered,
        },
    )
