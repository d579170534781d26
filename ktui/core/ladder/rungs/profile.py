"""The ``profile`` rung (on request): Nsight Compute on exactly one call after warm-up, clocks untouched.

ncu runs ``python -m ktui.worker.profile_target PARAMS`` (a fresh process that imports the version, warms up and
calls it once; ``ktui.core.inspect.ncu`` builds the command lines and reads the report) where the workers run: the
pool's transport is the ``ToolHost`` (this machine, or the remote host over SSH, which sends the sources, runs ncu
there and copies the report back). The report and its CSV pages go to
``.ktui/profiles/<problem>/<version>-<sha12>.*``. When the profiled spec is a benchmark spec, the judge times the
reference on it for its bytes and flops, so the call is placed against the measured ceilings; when the problem has a
pinned baseline version with a profile, the deltas against it are added.

Figures: ``spec``, ``report`` (relative to the workspace), ``kernels`` (per kernel: duration, SM/memory/DRAM
throughput, occupancy, registers...), ``duration_us`` (all kernels of the call, µs), ``pct_peak_bandwidth`` and
``pct_peak_flops`` (%), ``baseline`` and ``deltas``. Skipped without a GPU or without ncu.
"""

from __future__ import annotations

import math
import subprocess
from typing import Any

from ktui.core.inspect import ncu
from ktui.core.ladder.context import BENCH_SEED, RunContext, RungFailed
from ktui.core.results import ErrorInfo, RungResult, Status, fmt
from ktui.core.store import Baselines
from ktui.core.workers.transport import ToolHost
from ktui.protocol import ProfileParams, TimeReferenceRequest, json_float

NCU_TAIL_LINES = 15  # the lines of ncu's output quoted when it fails
EXPORT_TIMEOUT_S = 120  # exporting one page of a one-call report takes seconds


def run(ctx: RunContext) -> RungResult:
    """Profile one call of the profiled spec.

    Raises:
        RungFailed: ncu timed out (the benchmark time limit), exited with an error, or profiled no kernel.
    """
    if ctx.pool.device != "cuda":
        return RungResult(
            "profile",
            Status.SKIPPED,
            summary="Nsight Compute needs a CUDA GPU: no profile on cpu (interpreter)",
            figures={"reason": "no GPU"},
        )
    host = ctx.pool.transport
    if not isinstance(host, ToolHost):
        return RungResult(
            "profile",
            Status.SKIPPED,
            summary="the workers' transport cannot run Nsight Compute beside them: no profile",
            figures={"reason": "no tool host"},
        )
    where = getattr(host, "describe", lambda: "")()  # a remote host's name, for the messages
    tool = host.find_tool("ncu", ncu.SEARCH)
    if tool is None:
        missing = ncu.MISSING + (f" on {where}" if where else "")
        return RungResult("profile", Status.SKIPPED, summary=missing, figures={"reason": "no ncu"})
    spec = ctx.profile_spec()
    rel = ctx.state_rel / "profiles" / ctx.kernel.problem / f"{ctx.kernel.version}-{ctx.sha[:12]}"
    report = ctx.ws.root / rel
    report.parent.mkdir(parents=True, exist_ok=True)
    params: ProfileParams = {**ctx.sources(), "spec": spec, "seed": BENCH_SEED, "warmup": 3}
    assert ctx.out_dir is not None
    pfile = ctx.out_dir / "profile-params.json"
    target = [host.tool_python(), "-m", "ktui.worker.profile_target", str(pfile)]
    t = ctx.options.timeouts["benchmark"]
    rep = report.with_suffix(".ncu-rep")
    try:
        proc = host.run_tool(
            ncu.profile_command(tool, report, target), timeout_s=t, json_files={pfile: params}, fetch=[rep]
        )
    except subprocess.TimeoutExpired:
        raise RungFailed(ErrorInfo("TimeoutError", f"ncu did not finish within {t:g} s")) from None
    except OSError as exc:
        raise RungFailed(ErrorInfo("NcuError", f"ncu could not run{' on ' + where if where else ''}: {exc}")) from None
    if proc.returncode != 0 or not rep.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-NCU_TAIL_LINES:])
        raise RungFailed(ErrorInfo("NcuError", f"ncu exited {proc.returncode}", tail))
    pages = {}
    for page in ("raw", "details"):
        try:
            out = host.run_tool(ncu.export_command(tool, rep, page), timeout_s=EXPORT_TIMEOUT_S)
        except (subprocess.TimeoutExpired, OSError) as exc:
            raise RungFailed(ErrorInfo("NcuError", f"ncu could not export the {page} page: {exc}")) from None
        pages[page] = out.stdout
        (report.parent / f"{report.name}.{page}.csv").write_text(out.stdout)
    kernels = ncu.summaries(pages["raw"], pages["details"])
    if not kernels:
        raise RungFailed(ErrorInfo("NcuError", "ncu profiled no kernel in the call", proc.stdout[-2000:]))
    desc = ctx.problem_info()
    total_us = sum(k["duration_us"] or 0.0 for k in kernels)
    fig: dict[str, Any] = {
        "spec": spec,
        "report": str(rel.with_suffix(".ncu-rep")),
        "kernels": kernels,
        "duration_us": total_us,
    }
    if spec in desc["benchmarks"] and total_us > 0:  # where the call sits against the measured ceilings
        i = desc["benchmarks"].index(spec)
        timing: TimeReferenceRequest = {**ctx.sources(), "spec_indices": [i], "seed": BENCH_SEED}
        r = ctx.judge.time_reference(timing, timeout_s=t)["specs"][0]
        dtypes = [r["dtype"]] if r.get("flops") else []
        roof = ctx.judge.roofline({"dtypes": dtypes}, timeout_s=t)
        if r["bytes"]:
            fig["pct_peak_bandwidth"] = 100 * r["bytes"] / (total_us * 1e-6) / 1e9 / json_float(roof["bandwidth_gbps"])
        peak = json_float((roof.get("peak_tflops") or {}).get(r.get("dtype"), math.nan))
        if r["flops"] and math.isfinite(peak):
            fig["pct_peak_flops"] = 100 * r["flops"] / (total_us * 1e-6) / 1e12 / peak
    base = _baseline_profile(ctx)
    if base is not None:
        fig["baseline"] = base[0]
        fig["deltas"] = [ncu.deltas(b, k) for b, k in zip(base[1], kernels, strict=False)]
    return RungResult("profile", Status.OK, summary=profile_summary(kernels, fig), figures=fig)


def profile_summary(kernels: list[dict[str, Any]], fig: dict[str, Any]) -> str:
    """The first kernel's figures in one line, with % of peak bandwidth and FLOP/s when known."""
    k0 = kernels[0]
    summary = (
        f"{k0['kernel']}: {fmt(k0['duration_us'], 4)} us, SM {fmt(k0['sm_throughput_pct'])}%, "
        f"mem {fmt(k0['memory_throughput_pct'])}%, DRAM {fmt(k0['dram_throughput_pct'])}%, occupancy "
        f"{fmt(k0['achieved_occupancy_pct'])}/{fmt(k0['theoretical_occupancy_pct'])}%, "
        f"{k0['registers']} regs"
    )
    if "pct_peak_bandwidth" in fig:
        summary += f", {fig['pct_peak_bandwidth']:.0f}% of peak bandwidth"
    if "pct_peak_flops" in fig:
        summary += f", {fig['pct_peak_flops']:.0f}% of peak FLOP/s"
    if len(kernels) > 1:
        summary += f" (+{len(kernels) - 1} more kernels)"
    return summary


def _baseline_profile(ctx: RunContext) -> tuple[str, list[dict[str, Any]]] | None:
    """The pinned baseline version of this problem and its profile figures, when it has them."""
    version = Baselines(ctx.ws).get(ctx.kernel.problem)
    if not version or version == ctx.kernel.version or ctx.store is None:
        return None
    res = ctx.store.load(ctx.kernel.problem, version)
    prof = res.rung("profile") if res else None
    if prof is None or prof.status is not Status.OK:
        return None
    return version, prof.figures.get("kernels", [])
