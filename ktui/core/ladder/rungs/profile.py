"""The ``profile`` rung (on request): Nsight Compute on exactly one call after warm-up, clocks untouched.

ncu runs ``python -m ktui.worker.profile_target PARAMS`` (a fresh process that imports the version, warms up and
calls it once; ``ktui.core.inspect.ncu`` builds the command lines and reads the report) where the workers run: the
pool's transport is the ``ToolHost`` (this machine, or the remote host over SSH, which sends the sources, runs ncu
there and copies the report back). What ncu collects besides
ktui's own sections is steered by ``[profile]`` in ktui.toml (``set``, ``sections``, ``metrics``, ``args``:
``ktui.core.ladder.config``) and ``--ncu-args``. The report (``.ncu-rep``, kept) and its CSV pages go to
``.ktui/profiles/<problem>/<version>-<sha12>.*``. The source page (per SASS instruction: warp stall samples by
reason, instructions executed) is joined to the version's Python lines through the dumps of the same source
(``ktui.core.inspect.ncusource``; the dumps rung runs first when they are missing) and written as
``<report>.source.json`` for the SASS tab. When the profiled spec is a benchmark spec, the judge
times the reference on it for its bytes and flops, so the call is placed against the measured ceilings; when the
problem has a pinned baseline version with a profile, the deltas against it are added.

Figures: ``spec``, ``report`` (relative to the workspace), ``kernels`` (per kernel: duration, SM/memory/DRAM
throughput, occupancy, registers...), ``duration_us`` (all kernels of the call, µs), ``pct_peak_bandwidth`` and
``pct_peak_flops`` (%), ``baseline`` and ``deltas``, ``ncu_args`` (what was asked of ncu beyond ktui's own),
``source`` (the source page: its file and per kernel the hottest Python lines with their stall reasons). Skipped
without a GPU or without ncu.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

from ktui.core.inspect import ncu, ncusource, sass
from ktui.core.ladder.config import ConfigError, load_profile
from ktui.core.ladder.context import BENCH_SEED, RunContext, RungFailed
from ktui.core.ladder.peaks import ceilings
from ktui.core.results import ErrorInfo, RungResult, Status, fmt
from ktui.core.store import Baselines
from ktui.core.workers.transport import ToolHost
from ktui.protocol import ProfileParams, TimeReferenceRequest

NCU_TAIL_LINES = 15  # the lines of ncu's output quoted when it fails
EXPORT_TIMEOUT_S = 120  # exporting one page of a one-call report takes seconds
HOT_LINES = 8  # Python lines per kernel in the figures (the source file has them all)


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
    try:
        cfg = load_profile(ctx.ws.root)
    except ConfigError as exc:
        raise RungFailed(ErrorInfo("ConfigError", str(exc))) from None
    extra = (*cfg.args, *ctx.options.ncu_args)
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
            ncu.profile_command(tool, report, target, cfg.sections, cfg.metrics, cfg.set, extra),
            timeout_s=t,
            json_files={pfile: params},
            fetch=[rep],
        )
    except subprocess.TimeoutExpired:
        raise RungFailed(ErrorInfo("TimeoutError", f"ncu did not finish within {t:g} s")) from None
    except OSError as exc:
        raise RungFailed(ErrorInfo("NcuError", f"ncu could not run{' on ' + where if where else ''}: {exc}")) from None
    if proc.returncode != 0 or not rep.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-NCU_TAIL_LINES:])
        raise RungFailed(ErrorInfo("NcuError", f"ncu exited {proc.returncode}", tail))
    pages = {}
    for page in ("raw", "details", "source"):
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
        "ncu_args": _asked(cfg.set, cfg.sections, cfg.metrics, extra),
    }
    warnings: list[str] = []
    try:
        fig["source"] = source_page(ctx, pages["source"], report.parent / f"{report.name}.source.json")
    except ValueError as exc:
        warnings.append(f"the source page could not be read: {exc}")
    if spec in desc["benchmarks"] and total_us > 0:  # where the call sits against the measured ceilings
        i = desc["benchmarks"].index(spec)
        timing: TimeReferenceRequest = {**ctx.sources(), "spec_indices": [i], "seed": BENCH_SEED, "baselines": False}
        r = ctx.judge.time_reference(timing, timeout_s=t)["specs"][0]
        dtypes = [r["dtype"]] if r.get("flops") else []
        roof = ctx.judge.roofline({"dtypes": dtypes}, timeout_s=t)
        # against the datasheet's peaks (the larger of them and the measured ceilings: on the H200 an honest
        # matmul under ncu showed 105% of torch.matmul's measured peak, 2026-12-04)
        gbps, peak, fig["peak_source"] = ceilings(roof, r.get("dtype"))
        if r["bytes"] and math.isfinite(gbps):
            fig["pct_peak_bandwidth"] = 100 * r["bytes"] / (total_us * 1e-6) / 1e9 / gbps
        if r["flops"] and math.isfinite(peak):
            fig["pct_peak_flops"] = 100 * r["flops"] / (total_us * 1e-6) / 1e12 / peak
    base = _baseline_profile(ctx)
    if base is not None:
        fig["baseline"] = base[0]
        fig["deltas"] = [ncu.deltas(b, k) for b, k in zip(base[1], kernels, strict=False)]
    warnings += [
        f"{k['kernel']}: the profiled SASS is not the dumps' build: its samples are per instruction only"
        for k in fig.get("source", {}).get("kernels", [])
        if not k["matched"]
    ]
    return RungResult("profile", Status.OK, summary=profile_summary(kernels, fig), figures=fig, warnings=warnings)


def _asked(
    ncu_set: str | None, sections: tuple[str, ...], metrics: tuple[str, ...], extra: tuple[str, ...]
) -> list[str]:
    """What the profile asked of ncu beyond ktui's own sections and metrics, as ncu arguments."""
    out = ["--set", ncu_set] if ncu_set else []
    for sec in sections:
        out += ["--section", sec]
    if metrics:
        out += ["--metrics", ",".join(metrics)]
    return out + list(extra)


def source_page(ctx: RunContext, text: str, dest: Path) -> dict[str, Any]:
    """Read ncu's source page, join each kernel's rows to the Python lines of the dumps' SASS it matches (running
    the dumps rung when this source has none yet), write everything to ``dest`` and return the figures' part:
    ``file`` (relative to the workspace), and per kernel ``kernel``, ``matched``, ``total_samples`` and its
    ``HOT_LINES`` hottest lines (``ncusource.by_line``).

    Raises:
        ValueError: a source page that is not SASS rows.
    """
    pages = ncusource.parse_source_page(text)
    dumps = _dumps_sass(ctx) if pages else []
    assert ctx.kernel_snap is not None
    lines = ctx.kernel_snap.read_text(errors="replace").splitlines()
    kernels, saved = [], []
    for page in pages:
        line_of: dict[int, int | None] = {}
        matched = None
        for path, func, first, linemap in dumps:
            ops = [(ins.addr - func.instrs[0].addr, ins.base) for ins in func.instrs]
            if ncusource.match(page, ops):
                matched = path
                per = linemap.get("instrs", [])
                line_of = {off: per[first + i] if first + i < len(per) else None for i, (off, _) in enumerate(ops)}
                break
        hot = ncusource.by_line(page, line_of, lines) if matched else []
        kernels.append(
            {
                "kernel": page.kernel,
                "matched": matched is not None,
                "total_samples": page.total_samples,
                "hot_lines": [h for h in hot if h["line"]][:HOT_LINES],
            }
        )
        saved.append({"kernel": page.kernel, "dumps_sass": matched, "rows": ncusource.rows_json(page), "lines": hot})
    dest.write_text(json.dumps({"kernels": saved}))
    return {"file": str(dest.relative_to(ctx.ws.root)), "kernels": kernels}


def _dumps_sass(ctx: RunContext) -> list[tuple[str, sass.Function, int, dict[str, Any]]]:
    """Every SASS function of this source's dumps: (its .sass file relative to the workspace, the function, the
    index of its first instruction in the file's line map, the line map). Runs the dumps rung first when the dumps
    folder of this source has no SASS (``ktui run --rungs profile`` on a source never dumped)."""
    folder = ctx.ws.root / ctx.state_rel / "dumps" / ctx.kernel.problem / f"{ctx.kernel.version}-{ctx.sha[:12]}"
    if not list(folder.glob("*.sass")):
        from ktui.core.ladder.rungs import dumps

        dumps.run(ctx)
    out = []
    for f in sorted(folder.glob("*.sass")):
        try:
            funcs = sass.parse(f.read_text())
            linemap = json.loads(f.with_name(f.name[: -len(".sass")] + ".linemap.json").read_text())
        except (OSError, ValueError):
            continue
        first = 0
        for func in funcs:
            if func.instrs:
                out.append((str(f.relative_to(ctx.ws.root)), func, first, linemap))
            first += len(func.instrs)
    return out


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
