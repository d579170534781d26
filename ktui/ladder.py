"""The rung ladder for one kernel version: compile, run, correctness, benchmark.

This module runs in ktui's own process and never imports torch: it snapshots the sources, sends requests to the two
worker processes (the *candidate*, which runs the kernel, and the *judge*, which runs only the reference and decides
verdicts), turns their answers into ``RungResult``s and publishes every step on the ``EventBus``.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ktui.events import EventBus, LadderFinished, LadderStarted, RungFinished, RungStarted, WorkerState
from ktui.results import RUNG_ORDER, STOPPING_RUNGS, ErrorInfo, LadderResult, RungResult, Status, fmt, json_float
from ktui.store import ResultStore, Snapshots
from ktui.worker.client import WorkerError, WorkerProcess
from ktui.workspace import KernelRef, Workspace

BENCH_SEED = 20261129  # benchmark inputs are fixed so that reference timings can be reused across runs


@dataclass
class LadderOptions:
    """How a ladder runs. Time limits are per rung, in seconds; ``seed`` None draws fresh seeds for every run."""

    seeds: int = 2
    seed: int | None = None
    rungs: tuple[str, ...] = RUNG_ORDER
    timeouts: dict[str, float] = field(
        default_factory=lambda: {"compile": 240.0, "run": 120.0, "correctness": 300.0, "benchmark": 600.0}
    )


class WorkerPool:
    """The workers of one ktui session, on one device.

    ``candidate`` runs kernel versions; ``judge`` runs only references and decides verdicts; on the CPU a third,
    ``compiler``, compiles versions for sm_90a (the candidate there runs the Triton interpreter, which compiles
    nothing). On a GPU the candidate compiles for its own device and ``compiler`` is the candidate itself.
    """

    def __init__(self, workspace: Workspace, device: str, bus: EventBus | None = None):
        self.device = device
        self.bus = bus or EventBus()
        log_dir = workspace.state_dir / "logs"

        def on_state(role: str, state: str, detail: str) -> None:
            self.bus.publish(WorkerState(role=role, state=state, detail=detail))

        self.candidate = WorkerProcess("candidate", device, log_dir, on_state=on_state)
        self.judge = WorkerProcess("judge", device, log_dir, on_state=on_state)
        self.compiler = (WorkerProcess("compiler", device, log_dir, on_state=on_state) if device == "cpu"
                         else self.candidate)

    @property
    def workers(self) -> list[WorkerProcess]:
        return list({id(w): w for w in (self.candidate, self.judge, self.compiler)}.values())

    def start(self) -> None:
        """Spawn every worker now; they import torch in the background, and a thread per worker waits for its
        hello so that its state turns ``ready`` (or ``failed``) without anyone calling it."""
        for w in self.workers:
            w.start()
        for w in self.workers:
            threading.Thread(target=self._await_ready, args=(w,), name=f"ktui-{w.role}-hello", daemon=True).start()

    @staticmethod
    def _await_ready(w: WorkerProcess) -> None:
        try:
            w.ensure_ready()
        except WorkerError:
            pass  # reported through on_state("failed"); the next call raises it again

    def device_info(self) -> dict[str, Any]:
        """The candidate worker's device description (waits for its hello)."""
        return dict(self.candidate.ensure_ready().get("device", {"type": self.device}))

    def stop(self, grace_s: float = 3.0) -> None:
        """Ask every worker to exit, then give them ``grace_s`` together before killing the rest."""
        for w in self.workers:
            w.request_shutdown()
        deadline = time.monotonic() + grace_s
        for w in self.workers:
            w.stop(grace_s=max(0.0, deadline - time.monotonic()))


class _RungFailed(Exception):
    def __init__(self, info: ErrorInfo, figures: dict[str, Any] | None = None, summary: str = ""):
        super().__init__(info.message)
        self.info = info
        self.figures = figures or {}
        self.summary = summary


class Ladder:
    """Runs the ladder of one version at a time (callers serialize; the scheduler does)."""

    def __init__(self, workspace: Workspace, pool: WorkerPool, bus: EventBus | None = None,
                 options: LadderOptions | None = None, store: ResultStore | None = None):
        self.ws = workspace
        self.pool = pool
        self.bus = bus or pool.bus
        self.options = options or LadderOptions()
        self.snapshots = Snapshots(workspace)
        self.store = store
        self._run_id = 0
        self._current: _Context | None = None
        self._lock = threading.Lock()
        self._exec = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ktui-judge")

    # -- public ------------------------------------------------------------------------------------------------
    def run(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None) -> LadderResult:
        """Run ``rungs`` (default: the options' rungs, in ladder order) on ``kernel`` and return the result; never
        raises for a kernel's fault.

        A failed ``compile`` or ``run`` stops the ladder. The result is also published (``LadderFinished``) and saved
        in the result store when there is one.
        """
        with self._lock:
            self._run_id += 1
            run_id = self._run_id
            wanted = rungs or self.options.rungs
            return self._run(kernel, tuple(r for r in RUNG_ORDER if r in wanted), run_id)

    def close(self) -> None:
        self._exec.shutdown(wait=False, cancel_futures=True)

    # -- the ladder --------------------------------------------------------------------------------------------
    def _run(self, kernel: KernelRef, rungs: tuple[str, ...], run_id: int) -> LadderResult:
        started = time.time()
        t0 = time.perf_counter()
        result = LadderResult(problem=kernel.problem, version=kernel.version,
                              kernel=str(kernel.path.relative_to(self.ws.root)), device={"type": self.pool.device},
                              started_at=started)
        ctx = _Context(kernel=kernel, run_id=run_id, seed=self._base_seed())
        try:
            ctx.kernel_snap, result.source_sha256 = self.snapshots.take(kernel.problem, kernel.path)
            ctx.ref_snap, result.reference_sha256 = self.snapshots.take(kernel.problem,
                                                                        self.ws.reference_path(kernel.problem))
        except OSError as exc:
            self.bus.publish(LadderStarted(key=kernel.key, run_id=run_id, source_sha256="", rungs=rungs))
            rr = RungResult(rungs[0] if rungs else "compile", Status.FAILED,
                            error=ErrorInfo(type(exc).__name__, f"cannot read the source: {exc}"))
            result.rungs.append(rr)
            self.bus.publish(RungFinished(key=kernel.key, run_id=run_id, result=rr))
            return self._finish(result, t0, run_id)
        ctx.sha = result.source_sha256
        ctx.ref_sha = result.reference_sha256
        self.bus.publish(LadderStarted(key=kernel.key, run_id=run_id, source_sha256=result.source_sha256,
                                       rungs=rungs))
        ctx.out_dir = Path(tempfile.mkdtemp(prefix="ktui-out-", dir=_tmp_root()))
        self._current = ctx
        try:
            for name in rungs:
                self.bus.publish(RungStarted(key=kernel.key, run_id=run_id, rung=name))
                rr = self._rung(name, ctx)
                result.rungs.append(rr)
                self.bus.publish(RungFinished(key=kernel.key, run_id=run_id, result=rr))
                if rr.status is Status.FAILED and name in STOPPING_RUNGS:
                    break
        finally:
            shutil.rmtree(ctx.out_dir, ignore_errors=True)
            if ctx.prepare is not None:
                ctx.prepare.cancel()
            self._current = None
        hello = self.pool.candidate.last_hello
        if hello:
            result.device = dict(hello.get("device", result.device))
        return self._finish(result, t0, run_id)

    def _finish(self, result: LadderResult, t0: float, run_id: int) -> LadderResult:
        result.seconds = time.perf_counter() - t0
        if self.store is not None:
            try:
                self.store.save(result)
            except OSError:
                pass  # the result is still published; a full disk must not stop the session
        self.bus.publish(LadderFinished(key=result.key, run_id=run_id, result=result))
        return result

    def _base_seed(self) -> int:
        return self.options.seed if self.options.seed is not None else random.SystemRandom().randrange(1, 2**31 - 64)

    def _rung(self, name: str, ctx: "_Context") -> RungResult:
        fn: Callable[[_Context], RungResult] = getattr(self, f"_rung_{name}")
        t0 = time.perf_counter()
        try:
            rr = fn(ctx)
        except _RungFailed as f:
            rr = RungResult(name, Status.FAILED, figures=f.figures, summary=f.summary, error=f.info)
        except WorkerError as exc:
            rr = RungResult(name, Status.FAILED, error=self._unsnap(exc.info))
        rr.seconds = time.perf_counter() - t0
        return rr

    def _unsnap(self, info: ErrorInfo) -> ErrorInfo:
        """Show the user's paths, not ktui's snapshot paths, in messages and tracebacks."""
        return ErrorInfo(info.type, self._unsnap_text(info.message), self._unsnap_text(info.traceback))

    def _unsnap_text(self, text: str) -> str:
        ctx = self._current
        if not ctx or not text:
            return text
        for snap, real in ((ctx.kernel_snap, ctx.kernel.path), (ctx.ref_snap, self.ws.reference_path(ctx.kernel.problem))):
            if snap:
                text = text.replace(str(snap), str(real.relative_to(self.ws.root)))
        return text

    def _params(self, ctx: "_Context", **extra: Any) -> dict[str, Any]:
        k = ctx.kernel
        return {
            "kernel": {"name": str(k.path.relative_to(self.ws.root)), "path": str(ctx.kernel_snap), "sha": ctx.sha,
                       "search_dir": str(k.path.parent)},
            "reference": {"problem": k.problem, "path": str(ctx.ref_snap), "sha": ctx.ref_sha,
                          "search_dir": str(self.ws.reference_path(k.problem).parent)},
            **extra,
        }

    # -- rungs -------------------------------------------------------------------------------------------------
    def _rung_compile(self, ctx: "_Context") -> RungResult:
        t = self.options.timeouts
        desc = self.pool.judge.call("describe", self._params(ctx), timeout_s=t["compile"])
        ctx.describe = desc
        ctx.cases = [{"spec_index": i, "seed": ctx.seed + s} for i in range(len(desc["tests"]))
                     for s in range(self.options.seeds)]
        # The judge prepares the references while the candidate compiles.
        params = self._params(ctx, cases=ctx.cases)
        ctx.prepare = self._exec.submit(self.pool.judge.call, "prepare", params, t["correctness"])
        res = self.pool.compiler.call("compile", self._params(ctx, seed=ctx.seed), timeout_s=t["compile"])
        launches = res.get("launches", [])
        names = []
        for rec in launches:
            label = rec.get("kernel", "?")
            if rec.get("num_warps") is not None:
                label += f"(w={rec['num_warps']},s={rec.get('num_stages')})"
            if label not in names:
                names.append(label)
        langs = "+".join(res.get("languages", [])) or "host"
        targets = sorted({rec.get("target", "") for rec in launches})
        summary = f"{langs}: {', '.join(names) or 'no launches'}"
        if any("sm_90a" in x for x in targets):
            summary += " [sm_90a]"
        figures = {"languages": res.get("languages", []), "launches": launches, "import_s": res.get("import_s"),
                   "compile_s": res.get("compile_s")}
        return RungResult("compile", Status.OK, summary=summary, figures=figures, warnings=res.get("warnings", []))

    def _rung_run(self, ctx: "_Context") -> RungResult:
        if ctx.cases is None:
            raise _RungFailed(ErrorInfo("RuntimeError", "run needs compile first"))
        res = self.pool.candidate.call("execute", self._params(ctx, cases=ctx.cases, out_dir=str(ctx.out_dir)),
                                       timeout_s=self.options.timeouts["run"])
        ctx.executed = res["cases"]
        secs = [c["seconds"] for c in ctx.executed]
        summary = f"{len(secs)} calls ok on {len(ctx.describe['tests'])} specs, first {fmt(secs[0])} s, " \
                  f"total {fmt(sum(secs))} s" if secs else "no calls"
        return RungResult("run", Status.OK, summary=summary,
                          figures={"calls": len(secs), "first_call_s": secs[0] if secs else None,
                                   "total_s": sum(secs), "seeds": sorted({c["seed"] for c in ctx.cases})})

    def _rung_correctness(self, ctx: "_Context") -> RungResult:
        if ctx.executed is None:
            raise _RungFailed(ErrorInfo("RuntimeError", "correctness needs run first"))
        t = self.options.timeouts["correctness"]
        try:
            ctx.prepare.result(timeout=t)
        except WorkerError as exc:
            raise _RungFailed(self._unsnap(exc.info)) from None
        res = self.pool.judge.call("compare", self._params(ctx, cases=ctx.executed, out_dir=str(ctx.out_dir)),
                                   timeout_s=t)
        return correctness_result(res["cases"], ctx.describe)

    def _rung_benchmark(self, ctx: "_Context") -> RungResult:
        desc = ctx.describe or self.pool.judge.call("describe", self._params(ctx))
        if self.pool.device != "cuda":
            return RungResult("benchmark", Status.SKIPPED,
                              summary="timing under the Triton interpreter is not meaningful: no times on "
                                      "cpu (interpreter); run with --device cuda on a GPU",
                              figures={"reason": "interpreter"})
        if not desc["benchmarks"]:
            return RungResult("benchmark", Status.SKIPPED, summary="the reference declares no benchmarks",
                              figures={"reason": "no benchmarks"})
        t = self.options.timeouts["benchmark"]
        idx = list(range(len(desc["benchmarks"])))
        cand = self.pool.candidate.call("benchmark", self._params(ctx, spec_indices=idx, seed=BENCH_SEED),
                                        timeout_s=t)
        ref = self.pool.judge.call("time_reference", self._params(ctx, spec_indices=idx, seed=BENCH_SEED),
                                   timeout_s=t)
        dtypes = sorted({r["dtype"] for r in ref["specs"] if r.get("flops")})
        roof = self.pool.judge.call("roofline", {"dtypes": dtypes}, timeout_s=t)
        return benchmark_result(cand["specs"], ref["specs"], roof, desc)


@dataclass
class _Context:
    kernel: KernelRef
    run_id: int
    seed: int
    kernel_snap: Path | None = None
    ref_snap: Path | None = None
    sha: str = ""
    ref_sha: str = ""
    out_dir: Path | None = None
    describe: dict[str, Any] | None = None
    cases: list[dict[str, Any]] | None = None
    executed: list[dict[str, Any]] | None = None
    prepare: Future | None = None


def _tmp_root() -> str | None:
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


METRIC_KEYS = ("max_abs_err", "max_rel_err", "mse", "rmse", "psnr_db", "cosine", "rel_l2_err", "nan_count",
               "inf_count", "unwritten", "outside_tol", "worst_index", "worst_got", "worst_expected",
               "baseline_psnr_db", "path")


def correctness_result(cases: list[dict[str, Any]], describe: dict[str, Any]) -> RungResult:
    """Fold per-(spec, seed) verdicts into the correctness rung: per spec the worst seed's metrics, the worst spec
    named in the summary, the first failing case's reason as the error."""
    by_spec: dict[int, list[dict[str, Any]]] = {}
    for c in cases:
        by_spec.setdefault(c["spec_index"], []).append(c)
    specs = []
    for i, cs in sorted(by_spec.items()):
        worst = max(cs, key=lambda c: json_float(c.get("score", 0.0)))
        entry = {"label": describe["labels"][i], "spec": describe["tests"][i],
                 "ok": all(c["ok"] for c in cs), "seeds": [c["seed"] for c in cs], "worst_seed": worst["seed"],
                 "reason": worst.get("reason", ""), "tolerance": worst.get("tolerance"),
                 "precision": worst.get("precision"), "score": worst.get("score")}
        entry.update({k: worst.get(k) for k in METRIC_KEYS})
        specs.append(entry)
    worst_spec = max(specs, key=lambda s: json_float(s.get("score", 0.0))) if specs else None
    figures = {"specs": specs, "worst": worst_spec["label"] if worst_spec else None, "cases": len(cases)}
    failing = [s for s in specs if not s["ok"]]
    if failing:
        f = max(failing, key=lambda s: json_float(s.get("score", math.inf)))
        detail = f"spec={f['label']} seed={f['worst_seed']}: {f['reason']}"
        if f.get("max_abs_err") is not None:
            detail += f"; max_abs_err={fmt(f['max_abs_err'])}"
        n_fail = len(failing)
        suffix = f" ({n_fail} of {len(specs)} specs failed)" if n_fail > 1 else ""
        return RungResult("correctness", Status.FAILED, summary=detail + suffix, figures=figures,
                          error=ErrorInfo("CorrectnessError", detail + suffix))
    w = worst_spec
    summary = (f"worst={w['label']} max_abs_err={fmt(w['max_abs_err'])} max_rel_err={fmt(w['max_rel_err'])} "
               f"psnr_db={fmt(w['psnr_db'])} cosine={fmt(w['cosine'], 7)}") if w else "no specs"
    return RungResult("correctness", Status.OK, summary=summary, figures=figures)


def benchmark_result(cand: list[dict[str, Any]], ref: list[dict[str, Any]], roof: dict[str, Any],
                     describe: dict[str, Any]) -> RungResult:
    """Per benchmark spec: the candidate's median and spread, the reference's median, the speedup, achieved GB/s
    and TFLOP/s, and % of the measured roofline ``max(bytes / bandwidth, flops / peak)`` ("speed of light")."""
    refs = {r["spec_index"]: r for r in ref}
    bw = json_float(roof.get("bandwidth_gbps"))
    specs = []
    for c in cand:
        i = c["spec_index"]
        r = refs.get(i, {})
        med = c["median_us"]
        e: dict[str, Any] = {"label": describe["benchmark_labels"][i], "spec": describe["benchmarks"][i],
                             **{k: c[k] for k in ("median_us", "p25_us", "p75_us", "iqr_us", "min_us", "max_us",
                                                  "reps", "host_us_per_call")}}
        e["ref_median_us"] = r.get("median_us")
        e["speedup"] = (r["median_us"] / med) if r.get("median_us") and med > 0 else None
        floors = []
        if r.get("bytes"):
            e["gbps"] = r["bytes"] / (med * 1e-6) / 1e9
            floors.append(r["bytes"] / (bw * 1e9) * 1e6)
        if r.get("flops"):
            e["tflops"] = r["flops"] / (med * 1e-6) / 1e12
            peak = json_float(roof.get("peak_tflops", {}).get(r.get("dtype"), math.nan))
            if math.isfinite(peak) and peak > 0:
                floors.append(r["flops"] / (peak * 1e12) * 1e6)
        if floors:
            e["roofline_us"] = max(floors)
            e["sol_pct"] = 100.0 * e["roofline_us"] / med
        specs.append(e)
    parts = []
    for e in specs:
        s = f"{e['label']}: {fmt(e['median_us'], 4)} us (IQR {fmt(e['iqr_us'], 2)})"
        if e.get("speedup"):
            s += f", ref {fmt(e['ref_median_us'], 4)} us, {e['speedup']:.2f}x"
        if e.get("tflops") is not None:
            s += f", {e['tflops']:.1f} TFLOP/s"
        elif e.get("gbps") is not None:
            s += f", {e['gbps']:.0f} GB/s"
        if e.get("sol_pct") is not None:
            s += f" ({e['sol_pct']:.0f}% SOL)"
        parts.append(s)
    figures = {"specs": specs, "bandwidth_gbps": roof.get("bandwidth_gbps"), "peak_tflops": roof.get("peak_tflops")}
    return RungResult("benchmark", Status.OK, summary="; ".join(parts), figures=figures)
