"""The rung ladder for one kernel version: compile, run, correctness, benchmark.

This module runs in ktui's own process and never imports torch: it snapshots the sources, sends requests to the two
worker processes (the *candidate*, which runs the kernel, and the *judge*, which runs only the reference and decides
verdicts), turns their answers into ``RungResult``s and publishes every step on the ``EventBus``.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ktui.core.events import EventBus, LadderFinished, LadderStarted, RungFinished, RungStarted, WorkerState
from ktui.core.inspect import ncu, sass
from ktui.core.results import (DEFAULT_RUNGS, RUNG_ORDER, STOPPING_RUNGS, ErrorInfo, LadderResult, RungResult, Status,
                          expand_rungs, fmt, json_float)
from ktui.core.inspect.scan import scan_source
from ktui.core.store import ResultStore, Snapshots, atomic_write
from ktui.core.workers import orphans
from ktui.core.workers.client import WorkerError, WorkerProcess
from ktui.core.workspace import KernelRef, Workspace
from ktui.protocol import spec_size

BENCH_SEED = 20261129  # benchmark inputs are fixed so that reference timings can be reused across runs


@dataclass
class LadderOptions:
    """How a ladder runs. Time limits are per rung, in seconds; ``seed`` None draws fresh seeds for every run."""

    seeds: int = 2
    seed: int | None = None
    rungs: tuple[str, ...] = DEFAULT_RUNGS
    distributions: bool = True  # one extra case per spec for each input distribution the problem allows
    layouts: bool = True  # transposed / padded / offset / expanded inputs on the largest specs (unless contiguous_only)
    repeat: bool = True  # the first case of each spec runs twice on identical inputs (nondeterminism)
    timeouts: dict[str, float] = field(
        default_factory=lambda: {"compile": 240.0, "run": 120.0, "correctness": 300.0, "benchmark": 600.0}
    )


class WorkerPool:
    """The workers of one ktui session, on one device.

    ``candidate`` runs kernel versions; ``judge`` runs only references and decides verdicts; on the CPU a third,
    ``compiler``, compiles versions for sm_90a (the candidate there runs the Triton interpreter, which compiles
    nothing). On a GPU the candidate compiles for its own device and ``compiler`` is the candidate itself.

    Candidate code can do anything to the process it runs in (patch torch, patch ktui, leave threads), so the
    candidate-side workers are replaced after every ladder (``recycle``): a warm spare, started while the last
    ladder ran, takes over at once, and the next spare starts. No check ever runs where another version ran.
    """

    def __init__(self, workspace: Workspace, device: str, bus: EventBus | None = None, spares: bool = True):
        self.device = device
        self.bus = bus or EventBus()
        log_dir = workspace.state_dir / "logs"

        self._log_dir = log_dir
        self.candidate = self._make("candidate")
        self.judge = self._make("judge")
        self.compiler = self._make("compiler") if device == "cpu" else self.candidate
        self.use_spares = spares
        self._spares: dict[str, WorkerProcess] = {}
        self._lock = threading.Lock()
        orphans.become_subreaper()

    def _make(self, role: str) -> WorkerProcess:
        w = WorkerProcess(role, self.device, self._log_dir)
        w.on_state = lambda r, state, detail: self._report(w, state, detail)
        return w

    def _report(self, w: WorkerProcess, state: str, detail: str) -> None:
        """Worker states reach the bus only from the workers in service; a spare is silent until it takes over."""
        if any(w is x for x in (self.__dict__.get("candidate"), self.__dict__.get("judge"),
                                self.__dict__.get("compiler"))):
            self.bus.publish(WorkerState(role=w.role, state=state, detail=detail))

    @property
    def workers(self) -> list[WorkerProcess]:
        return list({id(w): w for w in (self.candidate, self.judge, self.compiler)}.values())

    def _candidate_roles(self) -> list[str]:
        return ["candidate"] + (["compiler"] if self.compiler is not self.candidate else [])

    def start(self) -> None:
        """Spawn every worker now; they import torch in the background, and a thread per worker waits for its
        hello so that its state turns ``ready`` (or ``failed``) without anyone calling it. Spares start once the
        workers are ready (the CPU is not shared by five torch imports at once)."""
        for w in self.workers:
            w.start()
        for w in self.workers:
            threading.Thread(target=self._await_ready, args=(w,), name=f"ktui-{w.role}-hello", daemon=True).start()
        if self.use_spares:
            threading.Thread(target=self._start_spares_when_ready, name="ktui-spares", daemon=True).start()

    def _start_spares_when_ready(self) -> None:
        for w in self.workers:
            self._await_ready(w)
        for role in self._candidate_roles():
            self._start_spare(role)

    def _start_spare(self, role: str) -> None:
        with self._lock:
            if self.stopping or not self.use_spares or role in self._spares:
                return
            spare = self._spares[role] = self._make(role)
        spare.start()
        threading.Thread(target=self._await_ready, args=(spare,), name=f"ktui-{role}-spare", daemon=True).start()

    @staticmethod
    def _await_ready(w: WorkerProcess) -> None:
        try:
            w.ensure_ready()
        except WorkerError:
            pass  # reported through on_state("failed"); the next call raises it again

    def recycle(self) -> None:
        """Replace the candidate-side workers: their spares (or fresh processes) take over, the used ones are
        killed with any process they left behind, and new spares start."""
        if self.stopping:
            return
        old = {role: getattr(self, role) for role in self._candidate_roles()}
        for role, used in old.items():
            with self._lock:
                spare = self._spares.pop(role, None)
            fresh = spare if spare is not None and spare.alive() else None
            if fresh is None:
                fresh = self._make(role)
                fresh.start()
            if self.compiler is used:
                self.compiler = fresh
            setattr(self, role, fresh)
            self._report(fresh, "ready" if fresh.hello is not None else "starting", "fresh after the last ladder")
        for used in {id(w): w for w in old.values()}.values():
            used.close()
            used.kill()
        orphans.kill_adopted(keep={w.pid for w in self._all() if w.pid})
        for role in old:
            self._start_spare(role)

    def _all(self) -> list[WorkerProcess]:
        with self._lock:
            spares = list(self._spares.values())
        return self.workers + spares

    def device_info(self) -> dict[str, Any]:
        """The candidate worker's device description (waits for its hello)."""
        return dict(self.candidate.ensure_ready().get("device", {"type": self.device}))

    @property
    def stopping(self) -> bool:
        return any(w.closed for w in (self.judge,))

    def stop(self, grace_s: float = 3.0) -> None:
        """Ask every worker to exit, then give them ``grace_s`` together before killing the rest (none is
        restarted once this began, so a ladder under way ends at once)."""
        everyone = self._all()
        for w in everyone:
            w.close()
        for w in everyone:
            w.request_shutdown()
        deadline = time.monotonic() + grace_s
        for w in everyone:
            w.stop(grace_s=max(0.0, deadline - time.monotonic()))
        orphans.kill_adopted(keep=set())


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
            return self._run(kernel, expand_rungs(rungs or self.options.rungs), run_id)

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
            self.pool.recycle()  # candidate code ran there: no later check runs in that process
        hello = self.pool.candidate.last_hello
        if hello:
            result.device = dict(hello.get("device", result.device))
        return self._finish(result, t0, run_id)

    def _finish(self, result: LadderResult, t0: float, run_id: int) -> LadderResult:
        """Save and publish the result merged with the stored one (a partial run keeps the other rungs' figures);
        return this run's own result. A run that ktui's shutdown or an unusable device broke says nothing about
        the kernel: it is published (the screen shows why) but never stored as the version's verdict."""
        result.seconds = time.perf_counter() - t0
        merged = result
        broken = self.pool.stopping or any(r.error and r.error.type == "WorkerStartError" for r in result.rungs)
        if self.store is not None and not broken:
            merged = merge(self.store.load(result.problem, result.version), result)
            try:
                self.store.save(merged)
            except OSError:
                pass  # the result is still published; a full disk must not stop the session
        self.bus.publish(LadderFinished(key=result.key, run_id=run_id, result=merged))
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
                text = text.replace(snap.name, real.name)  # SyntaxError messages name the file alone
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
        ctx.cases = make_cases(desc, self.options, ctx.seed)
        # The judge prepares the references while the candidate compiles.
        params = self._params(ctx, cases=ctx.cases)
        ctx.prepare = self._exec.submit(self.pool.judge.call, "prepare", params, t["correctness"])
        findings = scan_source(ctx.kernel_snap.read_text(errors="replace"))
        res = self.pool.compiler.call("compile", self._params(ctx, seed=ctx.seed), timeout_s=t["compile"])
        configs = int(res.get("autotune_configs") or 0)
        if configs > 1:  # every autotune config is checked alone, on its own inputs and output
            ctx.cases += [{"spec_index": i, "seed": ctx.seed, "config": c}
                          for c in range(1, configs) for i in range(len(desc["tests"]))]
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
        if configs > 1:
            summary += f" autotune: {configs} configs"
        figures = {"languages": res.get("languages", []), "launches": launches, "import_s": res.get("import_s"),
                   "compile_s": res.get("compile_s"), "autotune_configs": configs,
                   "scan": [{"kind": f.kind, "line": f.line, "text": f.text} for f in findings]}
        warnings = [f.message() for f in findings] + res.get("warnings", [])
        return RungResult("compile", Status.OK, summary=summary, figures=figures, warnings=warnings)

    def _rung_run(self, ctx: "_Context") -> RungResult:
        if ctx.cases is None:
            raise _RungFailed(ErrorInfo("RuntimeError", "run needs compile first"))
        res = self.pool.candidate.call("execute", self._params(ctx, cases=ctx.cases, out_dir=str(ctx.out_dir)),
                                       timeout_s=self.options.timeouts["run"])
        ctx.executed = res["cases"]
        ctx.tampered = list(res.get("tampered", []))
        secs = [c["seconds"] for c in ctx.executed if "seconds" in c]
        n_specs = len(ctx.describe["tests"])
        summary = f"{len(ctx.executed)} cases ok on {n_specs} specs, first {fmt(secs[0])} s, " \
                  f"total {fmt(sum(secs))} s" if secs else "no calls"
        warnings = []
        if res.get("threads_left"):
            warnings.append(f"{res['threads_left']} thread(s) the kernel started were still running after the calls "
                            "(work after custom_kernel returned is not checked)")
        if ctx.tampered:
            warnings.append(f"this version patched {', '.join(ctx.tampered[:5])} in its worker (replaced after "
                            "every ladder: no other version runs there)")
        return RungResult("run", Status.OK, summary=summary, warnings=warnings,
                          figures={"calls": len(ctx.executed), "first_call_s": secs[0] if secs else None,
                                   "total_s": sum(secs), "seeds": sorted({c["seed"] for c in ctx.cases}),
                                   "tampered": ctx.tampered})

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
        seed = random.SystemRandom().randrange(1, 2**30)
        cand = self.pool.candidate.call("benchmark", self._params(ctx, spec_indices=idx, seed=seed), timeout_s=t)
        recheck = self._recheck_timed_outputs(ctx, cand["specs"], t)
        host = {s["spec_index"]: self._host_us_per_call(ctx, s, t) for s in cand["specs"]}
        # Patches persist: what the candidate patched while it was timed is still patched now.
        patched = self.pool.candidate.call("integrity", {}, timeout_s=t)["tampered"]
        ctx.tampered = sorted(set(ctx.tampered) | set(patched))
        ref = self.pool.judge.call("time_reference", self._params(ctx, spec_indices=idx, seed=BENCH_SEED),
                                   timeout_s=t)
        dtypes = sorted({r["dtype"] for r in ref["specs"] if r.get("flops")})
        roof = self.pool.judge.call("roofline", {"dtypes": dtypes}, timeout_s=t)
        return benchmark_result(cand["specs"], ref["specs"], roof, desc, host=host, recheck=recheck,
                                tampered=ctx.tampered)

    # -- what the compiler made and what the hardware did ------------------------------------------------------
    def _profile_spec(self, ctx: "_Context") -> dict[str, Any]:
        desc = ctx.describe or self.pool.judge.call("describe", self._params(ctx))
        ctx.describe = desc
        if desc["benchmarks"]:  # the launch that is timed and profiled (its sizes decide Triton's specialization)
            return desc["benchmarks"][0]
        return max(desc["tests"], key=spec_size)

    def _rung_dumps(self, ctx: "_Context") -> RungResult:
        spec = self._profile_spec(ctx)
        rel = Path(".ktui") / "dumps" / ctx.kernel.problem / f"{ctx.kernel.version}-{ctx.sha[:12]}"
        folder = self.ws.root / rel
        res = self.pool.compiler.call("dumps", self._params(ctx, spec=spec, seed=ctx.seed, dumps_dir=str(folder)),
                                      timeout_s=self.options.timeouts["compile"])
        source = ctx.kernel_snap.read_text(errors="replace")
        uses_dot = "tl.dot" in source or "cute.gemm" in source or "mma" in source.lower()
        arch = self.device_arch()
        kernels, warnings, parts = [], list(res.get("warnings", [])), []
        for launch in res["launches"]:
            entry = {k: launch.get(k) for k in ("language", "kernel", "num_warps", "num_stages", "signature",
                                                "constexprs", "target")}
            entry["files"] = {stage: str(rel / f) for stage, f in launch["files"].items()}
            cubin = launch["files"].get("cubin")
            if cubin:
                try:
                    a = sass.analyze(folder / cubin, uses_dot, source_name=str(ctx.kernel_snap), arch=arch)
                except (sass.ToolMissing, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                    warnings.append(f"{launch.get('kernel')}: no SASS ({exc})")
                    a = None
                if a is not None:
                    base = Path(cubin).with_suffix("")
                    (folder / f"{base}.sass").write_text(a["sass"])
                    atomic_write(folder / f"{base}.linemap.json", json.dumps(a.get("line_map", {})).encode())
                    entry["files"]["sass"] = str(rel / f"{base}.sass")
                    entry["files"]["linemap"] = str(rel / f"{base}.linemap.json")
                    if launch.get("shared_bytes") is not None:  # Triton's dynamic shared memory
                        a["resources"]["dynamic_shared"] = int(launch["shared_bytes"])
                    entry.update(resources=a["resources"], mix=a["mix"], warnings=a["warnings"])
                    warnings += [f"{launch.get('kernel')}: {w}" for w in a["warnings"]]
                    r, m = a["resources"], a["mix"]
                    notable = [f"{k} {v}" for k, v in m.items() if k != "total" and v and
                               (k in sass.TENSOR or k.startswith(("LDG", "STG")) or k in ("LDL", "STL", "LDGSTS",
                                                                                           "UTMALDG"))]
                    smem = r.get("shared", 0) + r.get("dynamic_shared", 0)
                    parts.append(f"{launch.get('kernel')}: {r.get('registers')} regs, {r.get('local', 0)} B local, "
                                 f"{smem} B smem; {', '.join(notable[:5]) or 'no memory ops'}")
            kernels.append(entry)
        summary = "; ".join(parts) or "no kernel compiled"
        return RungResult("dumps", Status.OK, summary=f"{summary} [{arch}]", warnings=warnings,
                          figures={"dir": str(rel), "spec": spec, "arch": arch, "kernels": kernels})

    def device_arch(self) -> str:
        """``sm_90a`` without a GPU (what ktui compiles for), else the device's ``sm_XY``."""
        hello = self.pool.candidate.last_hello or {}
        cap = hello.get("device", {}).get("capability")
        if self.pool.device != "cuda" or not cap:
            return "sm_90a"
        return f"sm_{cap[0]}{cap[1]}" + ("a" if cap[0] == 9 else "")

    def _rung_profile(self, ctx: "_Context") -> RungResult:
        if self.pool.device != "cuda":
            return RungResult("profile", Status.SKIPPED, summary="Nsight Compute needs a CUDA GPU: no profile on "
                              "cpu (interpreter)", figures={"reason": "no GPU"})
        try:
            tool = ncu.find_ncu()
        except ncu.NcuMissing as exc:
            return RungResult("profile", Status.SKIPPED, summary=str(exc), figures={"reason": "no ncu"})
        spec = self._profile_spec(ctx)
        rel = Path(".ktui") / "profiles" / ctx.kernel.problem / f"{ctx.kernel.version}-{ctx.sha[:12]}"
        report = self.ws.root / rel
        report.parent.mkdir(parents=True, exist_ok=True)
        params = self._params(ctx, spec=spec, seed=BENCH_SEED, warmup=3)
        pfile = ctx.out_dir / "profile-params.json"
        pfile.write_text(json.dumps(params))
        target = [sys.executable, "-m", "ktui.worker.profile_target", str(pfile)]
        t = self.options.timeouts["benchmark"]
        try:
            run = subprocess.run(ncu.profile_command(tool, report, target), capture_output=True, text=True,
                                 timeout=t, env={**os.environ, "PYTHONPATH": _pythonpath()})
        except subprocess.TimeoutExpired:
            raise _RungFailed(ErrorInfo("TimeoutError", f"ncu did not finish within {t:g} s")) from None
        rep = report.with_suffix(".ncu-rep")
        if run.returncode != 0 or not rep.exists():
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
            raise _RungFailed(ErrorInfo("NcuError", f"ncu exited {run.returncode}", tail))
        pages = {}
        for page in ("raw", "details"):
            out = subprocess.run(ncu.export_command(tool, rep, page), capture_output=True, text=True, timeout=120)
            pages[page] = out.stdout
            (report.parent / f"{report.name}.{page}.csv").write_text(out.stdout)
        kernels = ncu.summaries(pages["raw"], pages["details"])
        if not kernels:
            raise _RungFailed(ErrorInfo("NcuError", "ncu profiled no kernel in the call", run.stdout[-2000:]))
        desc = ctx.describe
        total_us = sum(k["duration_us"] or 0.0 for k in kernels)
        fig: dict[str, Any] = {"spec": spec, "report": str(rel.with_suffix(".ncu-rep")), "kernels": kernels,
                               "duration_us": total_us}
        if spec in desc["benchmarks"] and total_us > 0:  # where the call sits against the measured ceilings
            i = desc["benchmarks"].index(spec)
            r = self.pool.judge.call("time_reference", self._params(ctx, spec_indices=[i], seed=BENCH_SEED),
                                     timeout_s=t)["specs"][0]
            roof = self.pool.judge.call("roofline", {"dtypes": [r["dtype"]] if r.get("flops") else []},
                                        timeout_s=t)
            if r.get("bytes"):
                fig["pct_peak_bandwidth"] = 100 * r["bytes"] / (total_us * 1e-6) / 1e9 / json_float(
                    roof["bandwidth_gbps"])
            peak = json_float((roof.get("peak_tflops") or {}).get(r.get("dtype"), math.nan))
            if r.get("flops") and math.isfinite(peak):
                fig["pct_peak_flops"] = 100 * r["flops"] / (total_us * 1e-6) / 1e12 / peak
        base = self._baseline_profile(ctx)
        if base is not None:
            fig["baseline"] = base[0]
            fig["deltas"] = [ncu.deltas(b, k) for b, k in zip(base[1], kernels)]
        k0 = kernels[0]
        summary = (f"{k0['kernel']}: {fmt(k0['duration_us'], 4)} us, SM {fmt(k0['sm_throughput_pct'])}%, "
                   f"mem {fmt(k0['memory_throughput_pct'])}%, DRAM {fmt(k0['dram_throughput_pct'])}%, occupancy "
                   f"{fmt(k0['achieved_occupancy_pct'])}/{fmt(k0['theoretical_occupancy_pct'])}%, "
                   f"{k0['registers']} regs")
        if "pct_peak_bandwidth" in fig:
            summary += f", {fig['pct_peak_bandwidth']:.0f}% of peak bandwidth"
        if "pct_peak_flops" in fig:
            summary += f", {fig['pct_peak_flops']:.0f}% of peak FLOP/s"
        if len(kernels) > 1:
            summary += f" (+{len(kernels) - 1} more kernels)"
        return RungResult("profile", Status.OK, summary=summary, figures=fig)

    def _baseline_profile(self, ctx: "_Context") -> tuple[str, list[dict[str, Any]]] | None:
        """The pinned baseline version of this problem and its profile figures, when it has them."""
        version = Baselines(self.ws).get(ctx.kernel.problem)
        if not version or version == ctx.kernel.version or self.store is None:
            return None
        res = self.store.load(ctx.kernel.problem, version)
        prof = res.rung("profile") if res else None
        if prof is None or prof.status is not Status.OK:
            return None
        return version, prof.figures.get("kernels", [])

    def _recheck_timed_outputs(self, ctx: "_Context", specs: list[dict[str, Any]], t: float) -> list[dict]:
        """Sample elements of each spec's last timed output at indices drawn now (after the timing, so the kernel
        cannot know them) and have the judge check them against the reference on that call's inputs."""
        rnd = random.SystemRandom()
        items = []
        for s in specs:
            indices = {}
            for leaf in s["leaves"]:
                n = leaf["numel"]
                picks = {0, n - 1} | {rnd.randrange(n) for _ in range(min(n, 4096))}
                indices[leaf["path"]] = sorted(picks)
            items.append({"spec_index": s["spec_index"], "indices": indices})
        sampled = self.pool.candidate.call("bench_sample", {"specs": items, "out_dir": str(ctx.out_dir)},
                                           timeout_s=t)
        for item, got in zip(items, sampled["specs"]):
            item.update(seed=got["seed"], files=got["files"])
        return self.pool.judge.call("check_samples", self._params(ctx, specs=items, out_dir=str(ctx.out_dir)),
                                    timeout_s=t)["specs"]

    def _host_us_per_call(self, ctx: "_Context", spec: dict[str, Any], t: float) -> dict[str, float]:
        """Per-call time of back-to-back calls ended by a device synchronize, timed from this process: the
        difference of two requests (N calls, 0 calls) cancels set-up and IPC. Nothing in the candidate's process
        (a side stream, a patched timer) can shorten it. Returns ``us_per_call`` (µs), ``enqueue_us_per_call`` (µs
        until the last call returned, before the synchronize: the host's own cost per call, as the worker measured
        it)."""
        params = self._params(ctx, spec_index=spec["spec_index"], seed=BENCH_SEED)
        replies: list[dict[str, Any]] = []  # the worker's own enqueue times

        def timed(n: int) -> float:
            t0 = time.perf_counter()
            replies.append(self.pool.candidate.call("host_loop", {**params, "calls": n}, timeout_s=t))
            return time.perf_counter() - t0

        base = timed(0)
        probe = max(timed(10) - base, 0.0) / 10  # seconds per call, roughly: sizes the real loop to ~100 ms
        calls = int(max(10, min(5000, 0.1 / max(probe, 1e-6))))
        times = [timed(0), timed(calls), timed(0), timed(calls)]
        loop = min(times[1], times[3]) - min(base, times[0], times[2])
        enqueue = min(r.get("enqueue_s", 0.0) for r in replies if r["calls"] == calls)
        return {"us_per_call": max(loop, 0.0) * 1e6 / calls, "enqueue_us_per_call": max(enqueue, 0.0) * 1e6 / calls}


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
    tampered: list[str] = field(default_factory=list)


def merge(old: LadderResult | None, new: LadderResult) -> LadderResult:
    """What the store keeps after ``new``: ``new`` itself, or, when ``new`` ran only some rungs on the same sources
    and device as ``old`` (``--rungs profile``, say), ``old``'s other rungs with ``new``'s in their place."""
    if old is None or (old.source_sha256, old.reference_sha256, old.device.get("type")) != \
            (new.source_sha256, new.reference_sha256, new.device.get("type")):
        return new
    names = {r.name for r in new.rungs}
    if not names - {"compile"} or {r.name for r in old.rungs} <= names:
        return new
    rungs = {r.name: r for r in old.rungs} | {r.name: r for r in new.rungs}
    merged = LadderResult(new.problem, new.version, new.kernel, new.device,
                          [rungs[n] for n in RUNG_ORDER if n in rungs], new.source_sha256, new.reference_sha256,
                          new.started_at, new.seconds)
    return merged


def _pythonpath() -> str:
    """PYTHONPATH for a process that must import ktui (the profiled program) as this process does."""
    here = str(Path(__file__).resolve().parents[3])
    rest = os.environ.get("PYTHONPATH", "")
    return here + (os.pathsep + rest if rest else "")


class Baselines:
    """The version pinned as each problem's baseline: ``.ktui/baseline.json`` ({problem: version})."""

    def __init__(self, workspace: Workspace):
        self.path = workspace.state_dir / "baseline.json"

    def all(self) -> dict[str, str]:
        try:
            return dict(json.loads(self.path.read_text()))
        except (OSError, ValueError):
            return {}

    def get(self, problem: str) -> str | None:
        return self.all().get(problem)

    def pin(self, problem: str, version: str) -> None:
        data = self.all()
        data[problem] = version
        atomic_write(self.path, json.dumps(data, indent=1).encode())


def _tmp_root() -> str | None:
    """Where candidate outputs travel to the judge: memory (/dev/shm) when it has room for large outputs."""
    try:
        if shutil.disk_usage("/dev/shm").free > 16 << 30:
            return "/dev/shm"
    except OSError:
        pass
    return None


METRIC_KEYS = ("max_abs_err", "max_rel_err", "mse", "rmse", "psnr_db", "cosine", "rel_l2_err", "scale_err",
               "nan_count", "inf_count", "unwritten", "outside_tol", "worst_index", "worst_got", "worst_expected",
               "where", "baseline_psnr_db", "expected_rel_l2_fp32", "expected_rel_l2_tf32", "run_to_run_spread", "path")
LAYOUTS = ("transposed", "padded", "offset", "expanded")
MAX_WARNINGS = 8



def make_cases(describe: dict[str, Any], options: LadderOptions, seed: int) -> list[dict[str, Any]]:
    """The correctness cases of one run (see ``ktui.worker.cases``), in two phases, each from a freshly imported
    module so that state a kernel keeps between calls (a cached size, grid or output) shows in both directions
    (cases.md stale-cache):

    1. sizes growing: per test spec, ``options.seeds`` seeds of the reference's own inputs, the first one called
       twice on identical inputs (nondeterminism), the second with decoy values instead of the poison in the memory
       the kernel allocates (a kernel that looks for the poison cannot tell it is checked);
    2. sizes shrinking: one case per other input distribution the problem allows, then the transposed, padded,
       offset and expanded layouts on the two largest specs.
    """
    tests = describe["tests"]
    up = sorted(range(len(tests)), key=lambda i: spec_size(tests[i]))
    cases: list[dict[str, Any]] = []
    for i in up:
        for k in range(options.seeds):
            c: dict[str, Any] = {"spec_index": i, "seed": seed + k}
            if k == 0 and options.repeat:
                c["repeat"] = 2
            if k == 1:  # memory the kernel allocates holds ordinary-looking values, not the poison: unwatched
                c["fill"] = "decoy"
            cases.append(c)
    phase2: list[dict[str, Any]] = []
    if options.distributions:
        for i in reversed(up):
            for j, dist in enumerate(d for d in describe.get("distributions", ["native"]) if d != "native"):
                phase2.append({"spec_index": i, "seed": seed + 101 + j, "dist": dist})
    if options.layouts and not describe.get("contiguous_only"):
        phase2 += [{"spec_index": i, "seed": seed + 7, "layout": lay} for i in list(reversed(up))[:2]
                   for lay in LAYOUTS]
    if phase2:
        phase2[0]["fresh"] = True
    return cases + phase2


def correctness_result(cases: list[dict[str, Any]], describe: dict[str, Any]) -> RungResult:
    """Fold per-case verdicts into the correctness rung: per spec the worst case's metrics, the worst spec named in
    the summary, the worst failing case (spec, seed, distribution, layout) and its reason as the error; unsupported
    layouts and per-case warnings (precision, nondeterminism within tolerance, scale) as rung warnings."""
    by_spec: dict[int, list[dict[str, Any]]] = {}
    for c in cases:
        by_spec.setdefault(c["spec_index"], []).append(c)
    specs = []
    warnings: list[str] = []
    for i, cs in sorted(by_spec.items()):
        judged = [c for c in cs if not c.get("unsupported")]
        worst = max(judged or cs, key=lambda c: json_float(c.get("score", 0.0)))
        entry = {"label": describe["labels"][i], "spec": describe["tests"][i],
                 "ok": all(c["ok"] for c in cs), "seeds": sorted({c["seed"] for c in cs}), "cases": len(cs),
                 "worst_seed": worst["seed"], "worst_case": worst.get("case", ""),
                 "reason": worst.get("reason", ""), "tolerance": worst.get("tolerance"),
                 "precision": worst.get("precision"), "score": worst.get("score"),
                 "unsupported_layouts": sorted({c["layout"] for c in cs if c.get("unsupported")}),
                 "failed_cases": [c.get("case", "") for c in cs if not c["ok"]]}
        entry.update({k: worst.get(k) for k in METRIC_KEYS})
        specs.append(entry)
        for c in cs:
            if c.get("unsupported"):
                warnings.append(f"{c.get('case') or 'spec=' + entry['label']} unsupported: {c['unsupported']}")
            for w in c.get("warnings", []):
                warnings.append(f"spec={entry['label']}: {w}")
    unique = list(dict.fromkeys(warnings))
    if len(unique) > MAX_WARNINGS:
        unique = unique[:MAX_WARNINGS] + [f"... and {len(unique) - MAX_WARNINGS} more warnings"]
    worst_spec = max(specs, key=lambda s: json_float(s.get("score", 0.0))) if specs else None
    figures = {"specs": specs, "worst": worst_spec["label"] if worst_spec else None, "cases": len(cases)}
    failing = [c for c in cases if not c["ok"]]
    if failing:
        f = max(failing, key=lambda c: json_float(c.get("score", math.inf)))
        detail = f"{f.get('case') or 'spec=' + f['label']}: {f['reason']}"
        if f.get("max_abs_err") is not None:
            detail += f"; max_abs_err={fmt(f['max_abs_err'])}"
        n_fail = sum(not s["ok"] for s in specs)
        suffix = f" ({n_fail} of {len(specs)} specs failed)" if n_fail > 1 else ""
        return RungResult("correctness", Status.FAILED, summary=detail + suffix, figures=figures,
                          error=ErrorInfo("CorrectnessError", detail + suffix), warnings=unique)
    w = worst_spec
    summary = (f"worst={w['label']} max_abs_err={fmt(w['max_abs_err'])} max_rel_err={fmt(w['max_rel_err'])} "
               f"psnr_db={fmt(w['psnr_db'])} cosine={fmt(w['cosine'], 7)}") if w else "no specs"
    return RungResult("correctness", Status.OK, summary=summary + f" ({len(cases)} cases)", figures=figures,
                      warnings=unique)


# Host loop against CUDA events. Honest kernels measured on an H200 (benchmarks/h200.sh, examples) give host loop /
# event median 0.98-1.09 (the loop runs with a warm L2, so GPU-bound calls can come out below the median); work the
# events miss (another stream) shows as host time that neither the median nor the host's own enqueue time explains.
HOST_FAIL_RATIO, HOST_FAIL_GAP_US = 1.4, 50.0
HOST_WARN_RATIO, HOST_WARN_GAP_US = 1.2, 20.0
SOL_SLACK = 0.8  # a time under 80% of the roofline floor cannot be real: the measured ceilings are within a few %


def benchmark_result(cand: list[dict[str, Any]], ref: list[dict[str, Any]], roof: dict[str, Any],
                     describe: dict[str, Any], host: dict[int, dict[str, float]] | None = None,
                     recheck: list[dict[str, Any]] | None = None, tampered: list[str] | None = None) -> RungResult:
    """Per benchmark spec: the candidate's median and spread, the reference's median, the speedup, achieved GB/s
    and TFLOP/s, and % of the measured roofline ``max(bytes / bandwidth, flops / peak)`` ("speed of light").

    ``host`` maps a spec index to ``{"us_per_call", "enqueue_us_per_call"}`` (see ``Ladder._host_us_per_call``).
    Fails, naming the spec, when the output of the last timed call is wrong (``recheck``), when a time is faster
    than the speed of light, when the candidate patched functions in its worker (``tampered``: the timer itself is
    suspect), or when the host-synchronized time per call exceeds both the CUDA-event median and the host's own
    enqueue time by ``HOST_FAIL_RATIO`` and ``HOST_FAIL_GAP_US`` (GPU work the events do not see: a side stream).
    A milder gap is a warning, and so is a host-bound call (enqueue time above the median).
    """
    refs = {r["spec_index"]: r for r in ref}
    bw = json_float(roof.get("bandwidth_gbps"))
    host = host or {}
    specs, problems, warnings = [], [], []
    for c in cand:
        i = c["spec_index"]
        r = refs.get(i, {})
        med = c["median_us"]
        label = describe["benchmark_labels"][i]
        e: dict[str, Any] = {"label": label, "spec": describe["benchmarks"][i],
                             **{k: c[k] for k in ("median_us", "p25_us", "p75_us", "iqr_us", "min_us", "max_us",
                                                  "reps")}}
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
            if med < SOL_SLACK * e["roofline_us"]:
                problems.append(f"spec={label}: impossible: {med:.4g} us is faster than the speed of light "
                                f"{e['roofline_us']:.4g} us (declared bytes/flops over the measured ceilings); the "
                                "kernel skips work or the timer misses it")
        hl = host.get(i)
        if hl is not None:
            h, q = hl["us_per_call"], hl.get("enqueue_us_per_call", 0.0)
            e["host_us_per_call"], e["enqueue_us_per_call"] = h, q
            explained = max(med, q)
            gap = h - explained
            if h > HOST_FAIL_RATIO * explained and gap > HOST_FAIL_GAP_US:
                problems.append(f"spec={label}: timing escapes the events: CUDA events give {med:.4g} us and the "
                                f"host enqueues a call in {q:.4g} us, but a device-synchronized loop takes {h:.4g} "
                                "us per call (GPU work on another stream?)")
            elif h > HOST_WARN_RATIO * explained and gap > HOST_WARN_GAP_US:
                warnings.append(f"spec={label}: device-synchronized loop {h:.4g} us per call against {med:.4g} us on "
                                "the events: work the events may not see")
            elif q > HOST_WARN_RATIO * med and q - med > HOST_WARN_GAP_US:
                warnings.append(f"spec={label}: host-bound: the host takes {q:.4g} us to issue a call that runs "
                                f"{med:.4g} us on the GPU (launch overhead; CUDA graphs or fewer launches help)")
        specs.append(e)
    for rc in recheck or []:
        if not rc["ok"]:
            problems.append(f"spec={rc['label']}: the output of the last timed call is wrong ({rc['reason']}): a "
                            "kernel must compute on every call; timed calls get fresh inputs")
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
    if tampered:
        problems.insert(0, f"timings untrustworthy: this version patched {', '.join(tampered[:5])} in its worker "
                           "(the functions that time and check it)")
    figures = {"specs": specs, "bandwidth_gbps": roof.get("bandwidth_gbps"), "peak_tflops": roof.get("peak_tflops"),
               "recheck": recheck or [], "tampered": tampered or []}
    if problems:
        return RungResult("benchmark", Status.FAILED, summary=problems[0], figures=figures, warnings=warnings,
                          error=ErrorInfo("TimingIntegrityError", "; ".join(problems)))
    return RungResult("benchmark", Status.OK, summary="; ".join(parts), figures=figures, warnings=warnings)
