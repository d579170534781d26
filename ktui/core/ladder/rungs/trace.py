"""The ``trace`` rung (on request): inside the kernel's time, region by region, CTA by CTA.

The version marks regions with ``ktui.trace`` (``with kt.region("mainloop"):``). This rung runs ``python -m
ktui.worker.trace_target`` in a fresh process on the profiled spec (``RunContext.profile_spec``): it times the
untraced build, then the traced build (the markers compiled in), then records one traced call
(``ktui.worker.trace_target``). The buffers are read here (``ktui.core.inspect.trace``), turned into figures
(``ktui.core.inspect.tracestats``: per region the median and spread over warps and CTAs and its share of the time;
CTA imbalance, waves and tail; the critical path; a timeline) and written as a Chrome trace for Perfetto
(``ktui.core.inspect.perfetto``). Everything goes to ``.ktui/traces/<problem>/<version>-<sha12>/``.

A traced time is never the benchmark's: the markers change the code. The figures give the untraced and the traced
median side by side, the overhead, what one marker costs (a calibration kernel of empty regions), and the
benchmark rung's median of the same source when it has one. Skipped without a GPU and for a version with no marker.

Figures (``ktui.core.figures.TraceFigures``): ``spec``, ``tracer``, ``dir``, ``report`` (the Chrome trace),
``untraced_us``, ``traced_us``, ``overhead_pct``, ``benchmark_us``, ``marker_cycles``, ``marker_ns``, ``kernels``
(``tracestats.summarize`` per traced kernel), ``device_name``, ``sm_count``, ``warnings``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ktui.core.inspect import perfetto, trace, tracestats
from ktui.core.ladder.config import ConfigError, TraceConfig, load_trace
from ktui.core.ladder.context import BENCH_SEED, RunContext, RungFailed
from ktui.core.results import ErrorInfo, RungResult, Status
from ktui.core.workers.transport import LocalTransport, ktui_pythonpath
from ktui.protocol.trace import TraceOutput, TraceParams

TAIL_LINES = 20  # the traced program's last lines quoted when it fails
MARKED = ("ktui.trace.triton", "ktui.trace.cute", "from ktui.trace import")
CALIBRATION = "ktui_marker_calibration"  # ktui.worker.trace_target's kernel of empty regions


def marks_regions(source: str) -> bool:
    """Whether ``source`` imports ktui's region markers (the rung has nothing to show otherwise)."""
    return any(m in source for m in MARKED)


def run(ctx: RunContext) -> RungResult:
    """Trace one call of the profiled spec.

    Raises:
        RungFailed: a bad ``[trace]`` setting, the traced program timed out (the benchmark's limit), exited with an
            error (the version raised: its traceback), or wrote buffers ktui cannot read.
    """
    if ctx.pool.device != "cuda":
        return RungResult(
            "trace",
            Status.SKIPPED,
            summary="tracing runs the kernel on a GPU: no trace on cpu (interpreter)",
            figures={"reason": "no GPU"},
        )
    if not isinstance(ctx.pool.transport, LocalTransport):  # the traced program runs beside ktui, not over SSH
        return RungResult(
            "trace",
            Status.SKIPPED,
            summary="the trace rung runs its traced program on this machine only: not over --remote yet",
            figures={"reason": "remote"},
        )
    try:
        cfg = load_trace(ctx.ws.root, ctx.options.tracer)
    except ConfigError as exc:
        raise RungFailed(ErrorInfo("ConfigError", str(exc))) from None
    assert ctx.kernel_snap is not None
    source = ctx.kernel_snap.read_text()
    if not marks_regions(source):
        return RungResult(
            "trace",
            Status.SKIPPED,
            summary=f'{ctx.kernel.key} marks no region: wrap parts of the kernel in `with kt.region("name"):` '
            "(import ktui.trace.triton as kt, or ktui.trace.cute for CuTeDSL)",
            figures={"reason": "no regions"},
        )
    if cfg.tracer == "proton" and "ktui.trace.cute" in source:
        return RungResult(
            "trace",
            Status.SKIPPED,
            summary="the proton tracer instruments Triton kernels; this version marks CuTeDSL ones: use tracer = "
            '"ktui" ([trace] in ktui.toml, or --tracer ktui)',
            figures={"reason": "proton: Triton only"},
        )
    spec = ctx.profile_spec()
    rel = ctx.state_rel / "traces" / ctx.kernel.problem / f"{ctx.kernel.version}-{ctx.sha[:12]}"
    out = ctx.ws.root / rel
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    doc = _run_target(ctx, cfg, spec, out)
    return fold(doc, out, rel, spec, _benchmark_us(ctx, spec))


def _run_target(ctx: RunContext, cfg: TraceConfig, spec: dict[str, Any], out: Path) -> TraceOutput:
    params: TraceParams = {
        **ctx.sources(),
        "spec": spec,
        "seed": BENCH_SEED,
        "tracer": cfg.tracer,
        "buffer_bytes": cfg.buffer_mib << 20,
        "out_dir": str(out),
        "reps": cfg.reps,
    }
    pfile = out / "params.json"
    pfile.write_text(json.dumps(params))
    env = {
        **os.environ,
        "PYTHONPATH": ktui_pythonpath(),
        # caches of its own: a traced build's PTX holds this process's buffer addresses, and is never reused
        "TRITON_CACHE_DIR": str(out / "triton-cache"),
        "CUTE_DSL_CACHE_DIR": str(out / "cute-cache"),
    }
    t = ctx.options.timeouts["benchmark"]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ktui.worker.trace_target", str(pfile)],
            capture_output=True,
            text=True,
            timeout=t,
            env=env,
            cwd=str(ctx.ws.root),
        )
    except subprocess.TimeoutExpired:
        raise RungFailed(ErrorInfo("TimeoutError", f"the traced program did not finish within {t:g} s")) from None
    finally:
        for d in ("triton-cache", "cute-cache"):
            shutil.rmtree(out / d, ignore_errors=True)
    (out / "trace.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (out / "trace.json").is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-TAIL_LINES:])
        raise RungFailed(
            ErrorInfo("TraceError", f"the traced program exited {proc.returncode}", ctx.user_paths_text(tail))
        )
    doc: TraceOutput = json.loads((out / "trace.json").read_text())
    return doc


def fold(doc: TraceOutput, out: Path, rel: Path, spec: dict[str, Any], benchmark_us: float | None) -> RungResult:
    """The rung's result from the traced program's ``trace.json`` and files in ``out`` (``rel``: ``out`` relative to
    the workspace): parse, summarize, export.

    Raises:
        RungFailed: a buffer or trace file ktui cannot read (``trace.TraceFormatError``), or nothing traced.
    """
    hint = doc["sm_clock_mhz"] / 1000.0 if doc.get("sm_clock_mhz") else None
    try:
        traces, calibration = _read(doc, out)
    except (trace.TraceFormatError, OSError) as exc:
        raise RungFailed(ErrorInfo("TraceFormatError", str(exc))) from None
    placed = [tracestats.place(t, hint) for t in traces]
    kernels = [tracestats.summarize(t, hint, doc["sm_count"], p) for t, p in zip(traces, placed)]
    fig: dict[str, Any] = {
        "spec": spec,
        "tracer": doc["tracer"],
        "dir": str(rel),
        "untraced_us": doc["untraced"]["median_us"],
        "traced_us": doc["traced"]["median_us"],
        "overhead_pct": 100.0 * (doc["traced"]["median_us"] / doc["untraced"]["median_us"] - 1.0),
        "kernels": kernels,
        "device_name": doc["device_name"],
        "sm_count": doc["sm_count"],
        "warnings": list(doc.get("warnings", [])),
    }
    if benchmark_us is not None:
        fig["benchmark_us"] = benchmark_us
    if calibration is not None:  # too short to measure a clock: NVML's, else the version's measured one
        measured = [k["clock_ghz"] for k in kernels if k.get("clock_ghz") and k["clock_source"].startswith("measured")]
        cal = tracestats.place(calibration, hint or (statistics.median(measured) if measured else None))
        if cal.intervals and cal.clock_ghz:
            fig["marker_ns"] = statistics.median(i.ns for i in cal.intervals)
            fig["marker_cycles"] = fig["marker_ns"] * cal.clock_ghz
    if placed:
        report = out / "trace.perfetto.json"
        report.write_text(json.dumps(perfetto.chrome_trace(placed, {"tracer": doc["tracer"], "spec": spec})))
        fig["report"] = str(rel / report.name)
    if not any(k.get("regions") and k.get("warps_traced") for k in kernels):
        why = "; ".join(p for k in kernels for p in k.get("problems", [])) or "no marked kernel was launched"
        raise RungFailed(ErrorInfo("TraceError", f"nothing was traced: {why}"), fig)
    return RungResult("trace", Status.OK, summary=trace_summary(fig), figures=fig, warnings=_warnings(fig))


def _read(doc: TraceOutput, out: Path) -> tuple[list[trace.KernelTrace], trace.KernelTrace | None]:
    if doc.get("proton_trace"):
        return trace.parse_proton((out / doc["proton_trace"]).read_text()), None
    traces, calibration = [], None
    for k in doc["kernels"]:
        t = trace.parse_buffer((out / k["file"]).read_bytes(), k["kernel"], k["language"], k["regions"], k["launches"])
        if k.get("calibration"):
            calibration = t
        else:
            traces.append(t)
    return traces, calibration


def _warnings(fig: dict[str, Any]) -> list[str]:
    out = list(fig.get("warnings", []))
    for k in fig["kernels"]:
        out += [f"{k['kernel']}: {p}" if not p.startswith(k["kernel"]) else p for p in k.get("problems", [])]
        if k.get("launches", 1) > 1:
            out.append(f"{k['kernel']} was launched {k['launches']} times in the call: the trace is its last launch")
    return out


def trace_summary(fig: dict[str, Any]) -> str:
    """One line: the first kernel's regions (share and median), CTA imbalance and tail, traced against untraced."""
    k = next((k for k in fig["kernels"] if k.get("regions")), fig["kernels"][0])
    regions = ", ".join(
        f"{r['name']} {r['share_pct']:.0f}% ({_us(r['median_ns'])})"
        for r in k["regions"]
        if r.get("share_pct") is not None
    )
    line = f"{k['kernel']}: {regions}" if regions else f"{k['kernel']}: no region completed"
    if k.get("imbalance") is not None:
        line += f"; CTAs {k['imbalance']:.2f}x median"
        if k.get("tail_pct") is not None:
            line += f", tail {k['tail_pct']:.0f}%"
        if k.get("sample_every", 1) > 1:
            line += f" (every {tracestats.ordinal(k['sample_every'])} CTA)"
    line += f"; traced {fig['traced_us']:.4g} us vs {fig['untraced_us']:.4g} us untraced ({fig['overhead_pct']:+.1f}%)"
    if fig.get("marker_cycles") is not None:
        line += f", a marker ~{fig['marker_cycles']:.0f} cycles"
    others = len([x for x in fig["kernels"] if x is not k])
    return line + (f" (+{others} more kernels)" if others else "")


def _us(ns: float) -> str:
    return f"{ns / 1000:.3g} us" if ns >= 1000 else f"{ns:.0f} ns"


def _benchmark_us(ctx: RunContext, spec: dict[str, Any]) -> float | None:
    """The benchmark rung's median of the same source on ``spec`` (this ladder's, or the stored one), if any."""
    if ctx.store is None:
        return None
    res = ctx.store.load(ctx.kernel.problem, ctx.kernel.version)
    bench = res.rung("benchmark") if res is not None and res.source_sha256 == ctx.sha else None
    if bench is None or bench.status is not Status.OK:
        return None
    for s in bench.figures.get("specs", []):
        if s.get("spec") == spec and isinstance(s.get("median_us"), (int, float)):
            return float(s["median_us"])
    return None
