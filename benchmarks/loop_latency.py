"""Edit-to-verdict latency: ktui's warm workers against a fresh ``python`` process per check, on the same cases.

    python3 benchmarks/loop_latency.py [--device auto|cpu|cuda] [--n 5] [--seed 20261201]
                                       [--problems vector_add/v2,softmax/v2,matmul/v2] [--skip-startup]

Per problem (``kernels/<problem>/<version>.py`` with ``references/<problem>.py``), measured side by side in one run,
the two paths interleaved edit by edit (so a change of the machine's load hits both):

- **warm**: a ktui ``Session`` (file watcher, scheduler, candidate, judge and, on the CPU, compiler workers already
  running) on a copy of the workspace, ladder ``compile, run, correctness`` with the seed pinned (``--seed``); each
  edit appends a comment to the kernel file and waits for the ``correctness`` rung's verdict. The time runs from the
  write to the verdict event: the watcher's debounce, the snapshots, describe and the case plan, the dry call and
  its compilation (for sm_90a on the CPU), every case run, the reference and the judge's comparison. Also kept per
  edit: each rung's own seconds (``RungResult.seconds``) and the case count (the correctness figures' ``cases``).
  Before each edit every worker, the warm spares included, has finished starting: the edit meets warm workers.
- **cold**: the same check the usual way: a new ``python`` process per edit (on its own copy of the workspace, so
  the session's watcher does not see it) that imports torch and triton, loads the reference from a ktui snapshot
  (``ktui.core.store.Snapshots``, which the reference's sha256 check requires) and the kernel, plans **exactly the
  cases the warm path runs** with ktui's own planner (``cold_plan``: the judge's ``describe_for_run`` with the fuzzed
  specs of the same seed, ``make_cases`` and ``autotune_cases`` with the same ``LadderOptions`` and seed), builds
  each case's inputs with ``ktui.worker.cases.build_input``, calls ``custom_kernel`` (twice for a ``repeat`` case,
  ``calls`` times on seeds ``seed + c`` for the burst, every autotuned kernel's config pinned as the candidate pins
  it, the module imported again where phase 2 begins), computes the reference (float64) and judges every output
  with ``ktui.worker.metrics.verdict`` under the tolerance the judge resolves (``resolve`` of the output's dtype and
  the reference's ``tolerance``, with the native reference's own error where the default allows a multiple of it).
  What the cold path leaves out is what only ktui does: poisoned and guarded memory, input hashes, the static
  scan, the compile coverage for sm_90a, TF32 expectations, the launch records. On the CPU it installs ktui's
  interpreter fixes (faithful bf16 in the Triton interpreter), without which bf16 outputs are biased. The first
  process of each path is not counted (it fills Triton's on-disk cache, and the warm path's first edit its
  in-memory ones).
- **start-up**: ``ktui``'s time to its first drawn screen (a subprocess on a copy of the workspace; the app exits
  after the first refresh; torch must not be imported there).

Prints per problem the medians, minima and maxima, the ratio cold/warm and the case counts of both paths (they must
be equal, and so must the cases per spec: the script says so), then a markdown table last. Exits 1 when a path
fails its check or the two paths planned different cases.

The cold process is this file run as ``python3 benchmarks/loop_latency.py --cold-check WS KEY DEVICE SEED SEEDS``;
it prints one JSON object (``cold_check``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from types import ModuleType

    from ktui.core.ladder import LadderOptions
    from ktui.protocol import Case, ProblemInfo
    from ktui.worker.problem import Problem

PROBLEMS = ("vector_add/v2", "softmax/v2", "matmul/v2")
DEFAULT_SEED = 20261201  # the pinned base seed of both paths' cases (``LadderOptions.seed``, ``--seed``)
WARM_RUNGS = ("compile", "run", "correctness")

FIRST_PAINT = r"""
import sys, time
t0 = time.perf_counter()
from ktui.tui.app import KtuiApp
from ktui.core.workspace import Workspace

class FirstPaint(KtuiApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(lambda: self.exit(time.perf_counter() - t0))

app = FirstPaint(Workspace(sys.argv[1]), device=sys.argv[2])
elapsed = app.run(headless=True, size=(100, 30))
print(f"{elapsed:.4f} {'torch' in sys.modules}")
"""


# -- the cold path's plan and check (run in the cold process; the plan also by the tests) ---------------------------
@dataclass
class ColdPlan:
    """What a cold check runs: the reference (loaded from its ktui snapshot), the kernel module, the judge's
    description of this run (fuzzed specs included), the case plan (``make_cases`` then ``autotune_cases``, as the
    compile rung plans it) and the autotune config count it was planned with."""

    problem: Problem
    module: ModuleType
    kernel_snap: Path
    kernel_search: Path
    describe: ProblemInfo
    cases: list[Case]
    configs: int


def ladder_options(seed: int, seeds: int = 2) -> LadderOptions:
    """The options both paths run with: ktui's defaults (distributions, layouts, repeats, fuzzing, near-duplicates),
    ``seeds`` seeds per spec, the base seed pinned to ``seed`` and the rungs up to correctness."""
    from ktui.core.ladder import LadderOptions

    return LadderOptions(seeds=seeds, seed=seed, rungs=WARM_RUNGS)


def autotune_config_count(module: ModuleType) -> int:
    """The most configs of any Triton autotuner among the kernel module's globals (through ``triton.heuristics``
    wrappers): what the compile rung's dry call counts (``Capture.autotune_configs``) for a kernel that launches its
    autotuned kernels; 0 when there is none."""
    from triton.runtime.autotuner import Autotuner

    most = 0
    for obj in list(vars(module).values()):
        seen = 0
        while obj is not None and seen < 8:
            if isinstance(obj, Autotuner):
                most = max(most, len(obj.configs))
                break
            obj, seen = getattr(obj, "fn", None), seen + 1
    return most


def cold_plan(ws_dir: Path, key: str, device: str, options: LadderOptions) -> ColdPlan:
    """The cold check's plan for version ``key`` (``problem/version``) of the workspace ``ws_dir`` on ``device``:
    the sources snapshotted as the ladder snapshots them (``Snapshots.take``: the reference loads from its snapshot
    with the snapshot's sha256, the check ``Problem`` makes), the judge's ``describe_for_run`` on ``device`` with the
    fuzzed specs of ``options.seed`` (when ``options.fuzz``), and the cases of ``make_cases`` and ``autotune_cases``
    with that seed, in the order the compile rung plans them.

    Raises:
        ValueError: ``options.seed`` is None (the two paths could not run the same cases).
        ProblemError: the reference does not load.
    """
    from ktui.core.ladder.cases import autotune_cases, make_cases
    from ktui.core.store import Snapshots
    from ktui.core.workspace import Workspace
    from ktui.worker.fuzz import describe_for_run
    from ktui.worker.problem import Problem, load_module

    if options.seed is None:
        raise ValueError("the cold path needs a pinned seed (LadderOptions.seed) to run the warm path's cases")
    seed = options.seed
    problem_name, version = key.split("/")
    ws = Workspace(ws_dir)
    snapshots = Snapshots(ws)
    ref_path = ws.reference_path(problem_name)
    ref_snap, ref_sha = snapshots.take(problem_name, ref_path)
    problem = Problem(ref_snap, problem_name, ref_sha, ref_path.parent)
    kernel_path = ws.root / "kernels" / problem_name / f"{version}.py"
    kernel_snap, kernel_sha = snapshots.take(problem_name, kernel_path)
    module = load_module(kernel_snap, f"cold_kernel_{kernel_sha[:16]}", kernel_path.parent, "the kernel version")
    describe = describe_for_run(problem, device, seed if options.fuzz else None)
    cases = make_cases(describe, options, seed)
    configs = autotune_config_count(module)
    cases += autotune_cases(describe, configs, seed)
    return ColdPlan(problem, module, kernel_snap, kernel_path.parent, describe, cases, configs)


def cold_case_labels(plan: ColdPlan) -> list[tuple[str, str]]:
    """Per planned case, in order: its spec's label as the correctness figures name it (``describe["labels"]``,
    ``fuzzed(...)`` for a drawn spec) and its case label (``ktui.worker.cases.case_label``)."""
    from ktui.worker.cases import case_label

    out = []
    for case in plan.cases:
        label = plan.describe["labels"][case["spec_index"]]
        out.append((label, case_label(label, case)))
    return out


def per_spec(plan: ColdPlan) -> dict[str, int]:
    """Cases planned per spec label (what the correctness figures count per spec: a burst or a repeat is one)."""
    counts: dict[str, int] = {}
    for label, _ in cold_case_labels(plan):
        counts[label] = counts.get(label, 0) + 1
    return counts


def _prepare(problem: Problem, case: Case, data: Any) -> dict[str, Any]:
    """The reference side of one case, as the judge's prepare computes it for the verdict: the native output (the
    expected dtypes and shapes), the float64 one, the policy dtype, the native reference's own error where a default
    tolerance allows a multiple of it, and why a special-values case is not judged (``skip``)."""
    from ktui.worker.native import native_errors
    from ktui.worker.problem import _map, inputs_only, output_dtype, policy_dtype
    from ktui.worker.special import SPECIAL, valid_reference
    from ktui.worker.tensors import flatten
    from ktui.worker.tolerance import native_unusable, resolve

    expected = problem.reference_native(data)
    ref, precision = problem.reference(data)
    prep: dict[str, Any] = {
        "expected": expected,
        "ref": ref,
        "precision": precision,
        "policy_dtype": policy_dtype(inputs_only(problem, data), expected),
    }
    if precision == "float64" and any(
        resolve(output_dtype(e, prep["policy_dtype"]), problem.tolerance).native_factor for _, e in flatten(expected)
    ):
        prep["native_err"] = native_errors(problem.reference_native, _map, data, expected, ref, case["seed"])
    if case.get("dist") in SPECIAL:
        prep["skip"] = valid_reference(ref, expected, problem.allow_nan) or native_unusable(prep.get("native_err"))
    return prep


def _judge(problem: Problem, prep: dict[str, Any], out: Any) -> str:
    """'' when every output leaf of ``out`` passes ``metrics.verdict`` against the float64 reference under the
    resolved tolerance (and has the native reference's dtype and shape), else the first reason."""
    import torch

    from ktui.worker import metrics
    from ktui.worker.compare import with_native
    from ktui.worker.problem import output_dtype
    from ktui.worker.tensors import flatten
    from ktui.worker.tolerance import resolve

    got = dict(flatten(out))
    refs = dict(flatten(prep["ref"]))
    for path, exp in flatten(prep["expected"]):
        if path not in got:
            return f"{path} missing from the output"
        o, r = got[path], refs[path]
        exp_t = exp if isinstance(exp, torch.Tensor) else torch.tensor(exp)
        o_t = o if isinstance(o, torch.Tensor) else torch.tensor(o, dtype=exp_t.dtype)
        r_t = r if isinstance(r, torch.Tensor) else torch.tensor(r, dtype=torch.float64)
        if o_t.dtype != exp_t.dtype or tuple(o_t.shape) != tuple(exp_t.shape):
            return f"{path} is {o_t.dtype}{tuple(o_t.shape)}, expected {exp_t.dtype}{tuple(exp_t.shape)}"
        tol = with_native(resolve(output_dtype(exp, prep["policy_dtype"]), problem.tolerance), prep, path)
        m = metrics.verdict(o_t.detach().cpu(), r_t.detach().cpu(), tol, allow_nan=problem.allow_nan)
        if not m["ok"]:
            return f"{path}: {m['reason']}"
    return ""


def _calls_of(case: Case) -> Iterator[Case]:
    """The calls one case makes: ``repeat`` calls on identical inputs, or the burst's ``calls`` calls on seeds
    ``seed + c`` (``CheckedCalls._burst``), else one."""
    if case.get("calls"):
        base = {k: v for k, v in case.items() if k != "calls"}
        for c in range(int(case["calls"])):
            yield {**base, "seed": case["seed"] + c}  # type: ignore[typeddict-item]
        return
    for _ in range(int(case.get("repeat", 1))):
        yield case


def run_plan(plan: ColdPlan, device: str) -> dict[str, Any]:
    """Run every case of ``plan`` on ``device`` and judge it: inputs from ``build_input``, ``custom_kernel`` called
    (each autotuned kernel's config pinned as the candidate pins it: ``capture.pinned_config`` with the case's
    ``config``, 0 when it has none, salted by its seed and spec), the kernel module imported again at a ``fresh``
    case, the reference prepared once per distinct input (the judge's key), a layout the kernel refuses with an
    exception counted as unsupported (as the candidate does).

    Returns ``{"ok", "cases", "calls", "judged", "skipped", "unsupported", "failures"}`` (``failures``: up to 3
    ``case label: reason`` lines).
    """
    import torch

    from ktui.worker import capture
    from ktui.worker.cases import build_input, case_label, empty_spec, label_of, spec_of
    from ktui.worker.problem import load_module

    problem = plan.problem
    pin = plan.configs > 0
    if pin:
        capture.install_autotune_hooks()
    fn = plan.module.custom_kernel
    prepared: dict[tuple[Any, ...], dict[str, Any]] = {}
    calls = judged = skipped = unsupported = 0
    failures: list[str] = []
    for case in plan.cases:
        if case.get("fresh"):  # phase 2 from a freshly imported module, as the candidate runs it
            fn = load_module(
                plan.kernel_snap, plan.module.__name__, plan.kernel_search, "the kernel version"
            ).custom_kernel
        salt = f"{case['seed']}:{case['spec_index']}"
        for sub in _calls_of(case):
            data = build_input(problem, sub, device)
            key = (
                sub["spec_index"],
                sub["seed"],
                sub.get("dist", "native"),
                sub.get("layout", "contiguous"),
                bool(sub.get("near_dup")),
                repr(sub.get("spec")),
            )
            if key not in prepared:
                prepared[key] = _prepare(problem, sub, data)
            prep = prepared[key]
            try:
                if pin:
                    with capture.pinned_config(case.get("config", 0), salt):
                        out = fn(data)
                else:
                    out = fn(data)
                if device == "cuda":
                    torch.cuda.synchronize()
            except Exception as exc:
                # a strided layout or a 0 size the kernel refuses: unsupported, as ``worker.checked`` counts it
                if case.get("layout", "contiguous") != "contiguous" or empty_spec(spec_of(problem, sub)):
                    unsupported += 1
                    break
                failures.append(f"{case_label(label_of(problem, sub), sub)}: raised {type(exc).__name__}: {exc}")
                break
            calls += 1
            if prep.get("skip"):
                skipped += 1
                continue
            reason = _judge(problem, prep, out)
            judged += 1
            if reason and len(failures) < 3:
                failures.append(f"{case_label(label_of(problem, sub), sub)}: {reason}")
            del out, data
    return {
        "ok": not failures,
        "cases": len(plan.cases),
        "calls": calls,
        "judged": judged,
        "skipped": skipped,
        "unsupported": unsupported,
        "failures": failures,
    }


def cold_check(ws_dir: Path, key: str, device: str, seed: int, seeds: int) -> dict[str, Any]:
    """The whole cold check, in this (fresh) process: import torch and triton (with ``TRITON_INTERPRET=1`` on the
    CPU, set before triton loads, and ktui's interpreter fixes), plan (``cold_plan``) and run (``run_plan``).
    Returns ``run_plan``'s figures plus ``import_s``, ``plan_s``, ``check_s`` (seconds) and ``per_spec`` (cases per
    spec label) and ``seeds`` (the planned cases' seeds, sorted, each once)."""
    t0 = time.perf_counter()
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch  # noqa: F401
    import triton  # noqa: F401

    if device == "cpu":
        from ktui.worker import interp_fixes

        interp_fixes.install()
    t1 = time.perf_counter()
    plan = cold_plan(ws_dir, key, device, ladder_options(seed, seeds))
    t2 = time.perf_counter()
    res = run_plan(plan, device)
    t3 = time.perf_counter()
    return {
        **res,
        "per_spec": per_spec(plan),
        "seeds": sorted({c["seed"] for c in plan.cases}),
        "import_s": t1 - t0,
        "plan_s": t2 - t1,
        "check_s": t3 - t2,
    }


# -- the measurements (ktui's own process: no torch here) ---------------------------------------------------------
def copy_workspace(problem: str) -> Path:
    """A temporary workspace with ``references/<problem>.py`` and ``kernels/<problem>/`` of this repository."""
    d = Path(tempfile.mkdtemp(prefix="ktui-latency-"))
    (d / "references").mkdir()
    shutil.copy(ROOT / "references" / f"{problem}.py", d / "references")
    shutil.copytree(ROOT / "kernels" / problem, d / "kernels" / problem)
    return d


def _env(device: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    return env


class WarmPath:
    """A started ``Session`` on ``ws_dir`` (watcher on, seed pinned); ``edit(i)`` saves edit ``i`` of ``key`` and
    returns its figures once the ladder finished."""

    def __init__(self, ws_dir: Path, key: str, device: str, seed: int, seeds: int, remote: Any = None):
        """``remote``: a ``ktui.core.remote.config.RemoteConfig`` to run the workers there (benchmarks/ssh_latency.py),
        None for here."""
        import queue

        from ktui.core.events import FirstVerdict, LadderFinished, RungFinished
        from ktui.core.session import Session
        from ktui.core.workspace import Workspace

        self._types = (RungFinished, LadderFinished, FirstVerdict)
        self.events: queue.Queue[Any] = queue.Queue()
        self.session = Session(Workspace(ws_dir), device, options=ladder_options(seed, seeds), remote=remote)
        self.session.bus.subscribe(lambda ev: self.events.put(ev) if isinstance(ev, self._types) else None)
        self.session.start()
        problem, version = key.split("/")
        self.path = ws_dir / "kernels" / problem / f"{version}.py"
        self.base = self.path.read_text()
        self.settle()

    def settle(self) -> None:
        """Wait until every worker of the pool, the warm spares the last ladder started included, is ready: an edit
        then meets warm workers and no torch import competes with the other path for the CPU."""
        pool = self.session.pool
        for w in pool._all():  # the workers in service and the spares (private: a benchmark's view)
            w.ensure_ready()

    def edit(self, i: int) -> dict[str, Any]:
        """Save edit ``i`` and wait for the ladder: ``first_s`` (write to the first verdict, ``FirstVerdict``: every
        test spec once, native inputs), ``verdict_s`` (write to the full correctness verdict), the seconds of each
        rung, the correctness rung's case count and figures.

        Raises:
            SystemExit: a rung failed, or no correctness verdict came within 20 minutes.
        """
        from ktui.core.events import FirstVerdict, LadderFinished, RungFinished

        self.settle()
        t0 = time.perf_counter()
        self.path.write_text(self.base + f"\n# edit {i}\n")
        out: dict[str, Any] = {"rungs": {}}
        while True:
            ev = self.events.get(timeout=1200)
            if isinstance(ev, FirstVerdict) and "first_s" not in out:
                out["first_s"] = time.perf_counter() - t0
                out["first_cases"] = ev.cases
            if isinstance(ev, RungFinished):
                r = ev.result
                out["rungs"][r.name] = r.seconds
                if r.status.value != "ok":
                    raise SystemExit(f"warm path: {r.name} {r.status.value}: {r.summary}")
                if r.name == "run":
                    out["run_seeds"] = r.figures.get("seeds")
                    out["calls"] = r.figures.get("calls")
                if r.name == "correctness":
                    out["verdict_s"] = time.perf_counter() - t0
                    out["cases"] = r.figures.get("cases")
                    out["per_spec"] = {s["label"]: s["cases"] for s in r.figures.get("specs", [])}
            if isinstance(ev, LadderFinished):
                break
        if "verdict_s" not in out:
            raise SystemExit("warm path: the ladder ended without a correctness verdict")
        return out

    def stop(self) -> None:
        self.session.stop()


def cold_once(ws_dir: Path, key: str, device: str, seed: int, seeds: int, i: int) -> dict[str, Any]:
    """Save edit ``i`` of ``key`` in ``ws_dir`` and run one cold check in a new ``python`` process; returns its
    figures (``cold_check``) with ``wall_s``, the process's wall time.

    Raises:
        SystemExit: the process failed, or the kernel failed the check.
    """
    problem, version = key.split("/")
    path = ws_dir / "kernels" / problem / f"{version}.py"
    base = path.read_text().split("\n# cold edit ")[0]
    path.write_text(base + f"\n# cold edit {i}\n")
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--cold-check",
        str(ws_dir),
        key,
        device,
        str(seed),
        str(seeds),
    ]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(device), cwd=ROOT)
    wall = time.perf_counter() - t0
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise SystemExit(f"cold path failed (exit {p.returncode}): {p.stdout[-500:]} {p.stderr[-3000:]}") from None
    if p.returncode or not res["ok"]:
        raise SystemExit(f"cold path: the check failed: {res.get('failures')} {p.stderr[-2000:]}")
    return {**res, "wall_s": wall}


def first_paint(device: str, n: int) -> list[tuple[float, float, bool]]:
    """``n`` start-ups of ``ktui`` to its first drawn screen (100x30, headless) on a copy of the vector_add
    workspace: per run (wall seconds of the process, seconds inside it, whether torch was imported)."""
    ws = copy_workspace("vector_add")
    out = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            p = subprocess.run(
                [sys.executable, "-c", FIRST_PAINT, str(ws), device], capture_output=True, text=True, env=_env(device)
            )
            wall = time.perf_counter() - t0
            if p.returncode:
                raise SystemExit(f"first paint failed: {p.stderr[-2000:]}")
            inner, torch_loaded = p.stdout.split()[-2:]
            out.append((wall, float(inner), torch_loaded == "True"))
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    return out


def stats(xs: list[float]) -> tuple[float, float, float]:
    """(median, min, max) of ``xs``."""
    return statistics.median(xs), min(xs), max(xs)


def measure(key: str, device: str, n: int, seed: int, seeds: int) -> dict[str, Any]:
    """Both paths on ``key``, ``n`` counted edits each (plus one not counted), interleaved edit by edit; returns
    the per-edit figures of both and whether they ran the same cases (count per spec and seeds)."""
    problem = key.split("/")[0]
    warm_dir, cold_dir = copy_workspace(problem), copy_workspace(problem)
    warm_runs: list[dict[str, Any]] = []
    cold_runs: list[dict[str, Any]] = []
    warm = None
    try:
        warm = WarmPath(warm_dir, key, device, seed, seeds)
        for i in range(n + 1):
            w = warm.edit(i)
            warm.settle()
            c = cold_once(cold_dir, key, device, seed, seeds, i)
            tag = "(not counted)" if i == 0 else ""
            print(
                f"  {key} edit {i}: warm {w['verdict_s']:.2f} s ({w['cases']} cases), cold {c['wall_s']:.2f} s "
                f"({c['cases']} cases: import {c['import_s']:.1f}, plan {c['plan_s']:.1f}, check {c['check_s']:.1f}) "
                f"{tag}",
                flush=True,
            )
            if i:
                warm_runs.append(w)
                cold_runs.append(c)
    finally:
        if warm is not None:
            warm.stop()
        shutil.rmtree(warm_dir, ignore_errors=True)
        shutil.rmtree(cold_dir, ignore_errors=True)
    same = all(
        w["per_spec"] == c["per_spec"] and w["run_seeds"] == c["seeds"] and w["cases"] == c["cases"]
        for w, c in zip(warm_runs, cold_runs, strict=True)
    )
    return {"key": key, "warm": warm_runs, "cold": cold_runs, "same_cases": same}


def _fmt(xs: list[float]) -> str:
    med, lo, hi = stats(xs)
    return f"{med:.2f} ({lo:.2f}-{hi:.2f})"


def report(
    results: list[dict[str, Any]], device: str, n: int, seed: int, paint: list[tuple[float, float, bool]]
) -> str:
    """The markdown table: per problem the case counts of both paths, the medians (min-max) of the warm path's
    write-to-verdict seconds and its rungs' seconds, of the cold process's wall seconds, and the ratio of the
    medians; the start-up line under it."""
    lines = [
        f"edit -> correctness verdict on {device}, {n} edits per path (median (min-max) seconds), seed {seed}",
        "",
        "| problem | cases warm / cold | same cases | warm: first verdict | full verdict | compile | run | correctness "
        "| cold: process | import | plan | check | cold / warm |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        w, c = r["warm"], r["cold"]
        wv = [x["verdict_s"] for x in w]
        cv = [x["wall_s"] for x in c]
        rung = {name: _fmt([x["rungs"][name] for x in w]) for name in WARM_RUNGS}
        lines.append(
            f"| {r['key']} | {w[0]['cases']} / {c[0]['cases']} | {'yes' if r['same_cases'] else 'NO'} "
            f"| {_fmt([x.get('first_s', math.nan) for x in w])} ({w[0].get('first_cases', 0)} cases) | {_fmt(wv)} "
            f"| {rung['compile']} | {rung['run']} | {rung['correctness']} | {_fmt(cv)} "
            f"| {_fmt([x['import_s'] for x in c])} | {_fmt([x['plan_s'] for x in c])} "
            f"| {_fmt([x['check_s'] for x in c])} | {stats(cv)[0] / stats(wv)[0]:.1f}x |"
        )
    if paint:
        lines.append("")
        lines.append(
            f"ktui start-up to the first drawn screen (100x30, headless), {len(paint)} runs: median wall "
            f"{statistics.median(p[0] for p in paint):.3f} s (in-process {statistics.median(p[1] for p in paint):.3f}"
            f" s); torch imported: {any(p[2] for p in paint)}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--cold-check":
        ws, key, device, seed, seeds = argv[1:6]
        print(json.dumps(cold_check(Path(ws), key, device, int(seed), int(seeds))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--problems", default=",".join(PROBLEMS), help="problem/version keys, comma-separated")
    ap.add_argument("--kernel", help="one problem/version (the same as --problems KEY)")
    ap.add_argument("--n", type=int, default=5, help="counted edits per path and problem (one more is not counted)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the base seed of both paths' cases")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per test spec (LadderOptions.seeds)")
    ap.add_argument("--skip-startup", action="store_true", help="skip the first-paint measurement (no textual)")
    args = ap.parse_args(argv)
    from ktui.core.device import resolve_device

    device = resolve_device(args.device)
    keys = [args.kernel] if args.kernel else [k.strip() for k in args.problems.split(",") if k.strip()]
    results = []
    for key in keys:
        print(f"{key} on {device}: {args.n} + 1 edits per path, seed {args.seed}", flush=True)
        results.append(measure(key, device, args.n, args.seed, args.seeds))
    paint = [] if args.skip_startup else first_paint(device, 5)
    print()
    print(report(results, device, args.n, args.seed, paint))
    return 0 if all(r["same_cases"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
