"""The candidate worker: imports a kernel version, compiles it, runs it, times it. It never sees a reference output.

Requests and replies are typed in ``ktui.protocol`` (``CompileRequest`` -> ``CompileReply``...): nearly every request
names the ``reference`` snapshot (``ReferenceSource``) and the ``kernel`` snapshot (``KernelSource``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, cast

import torch

from ktui.protocol import (
    BenchmarkReply,
    BenchmarkRequest,
    BenchSampleReply,
    BenchSampleRequest,
    BenchSpecTiming,
    Case,
    CompileReply,
    CompileRequest,
    DumpsReply,
    DumpsRequest,
    ExecutedCase,
    ExecuteReply,
    ExecuteRequest,
    HostLoopReply,
    HostLoopRequest,
    IntegrityReply,
    IntegrityRequest,
    KernelSource,
    OnProgress,
    OutputShape,
    PingReply,
    PingRequest,
    SampledSpec,
    SampleFile,
    Sources,
    spec_size,
)
from ktui.worker import allocation, capture, integrity
from ktui.worker.artifacts import public_launch, write_artifacts
from ktui.worker.cases import build_input, case_label, label_of
from ktui.worker.errors import CaseFailed, KernelError
from ktui.worker.guards import Guards
from ktui.worker.interp_bounds import is_out_of_bounds
from ktui.worker.problem import ProblemCache, inputs_only, load_module, read_snapshot, spec_label
from ktui.worker.structure import structure
from ktui.worker.tensors import (
    NestingError,
    aliases,
    copy_into,
    decoy_,
    flatten,
    hash_data,
    is_plain_tensor,
    poison_,
    save_outputs,
    tensor_bytes,
)
from ktui.worker.timing import bench, host_loop

COMPILER_MODULES = ("triton.compiler", "triton.language", "triton.backends", "cutlass", "mlir")


def is_compile_error(exc: BaseException) -> bool:
    """An exception raised by a compiler (Triton's frontend, ptxas, CuTeDSL) rather than by host code."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith(COMPILER_MODULES) or cls.__name__ in ("CompilationError", "PTXASError"):
            return True
    return "ptxas" in str(exc).lower()


def reraise_as_case(exc: BaseException, label: str) -> NoReturn:
    """Raise ``CaseFailed(label: Type: message)`` from a kernel's exception (KeyboardInterrupt passes through)."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    raise CaseFailed(f"{label}: {type(exc).__name__}: {exc}") from exc


class Candidate:
    """Handlers of the ``candidate`` role, and of the ``compiler`` role (``cross=True``: compile for sm_90a without a
    GPU and without the Triton interpreter; it serves only ``compile``)."""

    def __init__(self, device: str, cross: bool = False):
        self.device = device
        self.cross = cross
        self.problems = ProblemCache()
        self.module: ModuleType | None = None
        self.kernel_sha: str | None = None
        self.bench_last: dict[int, dict[str, Any]] = {}
        capture.install_triton()
        capture.install_autotune_hooks()
        if device == "cpu" and not cross:
            from ktui.worker import interp_fixes

            interp_fixes.install()
            from ktui.worker import interp_bounds

            interp_bounds.install()
        self.baseline = integrity.fingerprint()

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _load(self, k: KernelSource) -> Callable[[Any], Any]:
        """Import the kernel snapshot (fresh, under a name unique to its content) and return ``custom_kernel``."""
        if b"cutlass" in read_snapshot(Path(k["path"]), "the kernel version"):
            capture.install_cute(has_gpu=self.device == "cuda")
        search = Path(k["search_dir"]) if k.get("search_dir") else None
        self.module = load_module(Path(k["path"]), f"ktui_candidate_{k['sha'][:16]}", search, "the kernel version")
        self.kernel_sha = k["sha"]
        fn: object = getattr(self.module, "custom_kernel", None)
        if not callable(fn):
            raise KernelError(f"{k['name']} does not define custom_kernel(data)")
        return fn

    def _fn(self, params: Sources) -> Callable[[Any], Any]:
        """``custom_kernel`` of the version named in ``params``, imported only when it is not the one loaded."""
        k = params["kernel"]
        if self.module is None or self.kernel_sha != k["sha"]:
            return self._load(k)
        fn: Callable[[Any], Any] = self.module.custom_kernel
        return fn

    # -- integrity -----------------------------------------------------------------------------------------------
    def do_integrity(self, params: IntegrityRequest, progress: OnProgress) -> IntegrityReply:
        """What candidate code patched in this process since it started (torch, time, CUDA events...)."""
        return {"tampered": integrity.tampered(self.baseline)}

    # -- rungs -------------------------------------------------------------------------------------------------
    def do_compile(self, params: CompileRequest, progress: OnProgress) -> CompileReply:
        """Import the version and call ``custom_kernel`` once in dry mode on the largest test spec (sizes of 1 would
        make Triton compile a special case): every launch is compiled (for this GPU, or for sm_90a from the CPU) and
        none runs. Returns the launches, the autotune config count and timings."""
        problem = self.problems.get(params["reference"])
        t0 = time.perf_counter()
        fn = self._load(params["kernel"])
        import_s = time.perf_counter() - t0
        spec = max(problem.tests, key=spec_size)
        data = problem.generate(params["seed"], spec, self.device)
        cap = capture.Capture(dry=True, cross=self.cross)
        t1 = time.perf_counter()
        host_error = None
        progress({"done": 0, "total": 1, "case": f"the dry call on spec={spec_label(spec)}"})
        try:
            with capture.capturing(cap):
                fn(data)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            if is_compile_error(exc):
                reraise_as_case(exc, f"spec={spec_label(spec)}")
            # Host code failed, not a compiler: the run rung runs it for real and reports it there.
            host_error = f"custom_kernel raised {type(exc).__name__} during the dry call: {str(exc)[:200]}"
        self._sync()
        warnings = list(cap.warnings) + ([host_error] if host_error else [])
        if not cap.launches and not host_error:
            warnings.append("no Triton or CuTeDSL launch recorded: custom_kernel runs host code only")
        return {
            "import_s": round(import_s, 4),
            "compile_s": round(time.perf_counter() - t1, 4),
            "languages": cap.languages,
            "launches": [public_launch(rec) for rec in cap.launches],
            "autotune_configs": cap.autotune_configs,
            "warnings": warnings,
        }

    def do_dumps(self, params: DumpsRequest, progress: OnProgress) -> DumpsReply:
        """Compile the version as it launches on ``spec`` (a benchmark spec on a GPU) in dry mode and write, for
        every launch, its IR stages, PTX and cubin under ``dumps_dir``: Triton ttir, ttgir, llir, ptx, cubin;
        CuTeDSL ptx, cubin. Returns the launches with their files (names relative to ``dumps_dir``)."""
        problem = self.problems.get(params["reference"])
        fn = self._load(params["kernel"])
        spec = params["spec"]
        with allocation.placeholder_data():
            data = problem.generate(params["seed"], spec, self.device)
        cap = capture.Capture(dry=True, cross=self.cross, keep=True)
        progress({"done": 0, "total": 1, "case": f"the dry call on spec={spec_label(spec)}"})
        try:
            with capture.capturing(cap):
                fn(data)
        except BaseException as exc:
            reraise_as_case(exc, f"spec={spec_label(spec)}")
        self._sync()
        launches = write_artifacts(cap.launches, Path(params["dumps_dir"]))
        return {"launches": launches, "spec": spec, "warnings": cap.warnings}

    def _call(self, fn: Callable[[Any], Any], data: Any, case: Case, guards: Guards | None = None) -> tuple[Any, float]:
        self._sync()
        t0 = time.perf_counter()
        decoy = case["seed"] if case.get("fill") == "decoy" else None
        with allocation.poisoned_allocations(decoy, guards), capture.pinned_config(case.get("config", 0)):
            out = fn(data)
        self._sync()
        return out, time.perf_counter() - t0

    def do_execute(self, params: ExecuteRequest, progress: OnProgress) -> ExecuteReply:
        """Call ``custom_kernel`` on each case and write its outputs under ``out_dir``.

        Declared output buffers are filled with the poison NaN first, and so is any memory the kernel allocates with
        ``torch.empty*`` during the call. Each case reports the input hash before and after the call (the judge
        compares them with its own), the call's wall time (synchronized), outputs that alias inputs, and for
        ``repeat: 2`` a second output from identical inputs. A case with a non-contiguous ``layout`` that raises is
        reported as an unsupported layout instead of failing the rung.
        """
        problem = self.problems.get(params["reference"])
        # A fresh import: host-side state that the dry call left (a cached size, a cached output) must not carry
        # into the checks (cases.md stale-cache). Compiled kernels come back from Triton's cache.
        fn = self._load(params["kernel"])
        out_dir = Path(params["out_dir"])
        results: list[ExecutedCase] = []
        cases = params["cases"]
        kept: list[tuple[ExecutedCase, Any, str]] = []  # (entry, output, its hash when the call returned)
        expected = params.get("expected") or []  # the reference's output leaves per case, from the judge's prepare
        threads_before = threading.active_count()
        for i, case in enumerate(cases):
            if case.get("fresh"):
                fn = self._load(params["kernel"])  # a second phase, from a fresh module again
            label = case_label(label_of(problem, case), case)
            entry = cast(ExecutedCase, dict(case))  # cast: a copy of the Case; ExecutedCase adds only optional keys
            progress({"done": i, "total": len(cases), "case": label})  # what runs now, should the worker die
            for rep in range(case.get("repeat", 1)):
                guards = Guards()  # canaries around every input and every torch.empty* of the call (cases.md oob)
                data = guards.wrap_data(build_input(problem, case, self.device))
                for j, buf in enumerate(problem.output_buffers(data)):
                    if case.get("fill") == "decoy":
                        decoy_(buf, case["seed"] + 7919 * (j + 1))
                    else:
                        poison_(buf)
                inputs = inputs_only(problem, data)
                h_before = hash_data(inputs)
                try:
                    out, seconds = self._call(fn, data, case, guards)
                    guards.name_outputs(out)
                    out_of_bounds = guards.violations()
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    if (
                        case.get("layout", "contiguous") != "contiguous"
                        and not isinstance(exc, SystemExit)
                        and not is_out_of_bounds(exc)  # a memory error, whatever the layout
                    ):
                        self._sync()
                        entry["unsupported"] = (
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                            if str(exc)
                            else type(exc).__name__
                        )
                        break
                    reraise_as_case(exc, label)
                finally:
                    guards.close()
                if out_of_bounds:
                    raise CaseFailed(f"{label}: out-of-bounds write: {'; '.join(out_of_bounds[:4])}")
                folder = out_dir / f"case{i}" / (f"repeat{rep}" if rep else "")
                try:
                    leaves = save_outputs(out, folder, expected[i] if i < len(expected) else None)
                except NestingError as exc:
                    raise KernelError(f"{label}: {exc}") from None
                if rep == 0:
                    entry.update(
                        {
                            "seconds": round(seconds, 6),
                            "input_hash_before": h_before,
                            "input_hash_after": hash_data(inputs),
                            "outputs": leaves,
                            "structure": structure(out),
                            "aliases": aliases(out, inputs),
                        }
                    )
                    if all(leaf.get("file") or leaf["kind"] == "number" for leaf in leaves):  # bytes sent: readable
                        kept.append((entry, out, hash_data(out)))
                else:
                    entry["repeat_outputs"] = leaves
                    entry["repeat_dir"] = f"repeat{rep}"
                del out, data
            results.append(entry)
            progress({"done": i + 1, "total": len(cases)})
        # Every output stays alive until all cases ran: one that changes afterwards was still being written when the
        # call returned (a stream or thread the kernel did not wait for), or a later call wrote into it (a buffer
        # kept and reused across calls, which hands the caller memory the next call overwrites).
        self._sync()
        time.sleep(0.05)
        for entry, out, digest in kept:
            if hash_data(out) != digest:
                entry["changed_after"] = True
        del kept
        threads = threading.active_count() - threads_before
        return {"cases": results, "tampered": integrity.tampered(self.baseline), "threads_left": max(0, threads)}

    # -- benchmark -----------------------------------------------------------------------------------------------
    def do_benchmark(self, params: BenchmarkRequest, progress: OnProgress) -> BenchmarkReply:
        """Time ``custom_kernel`` on each benchmark spec (CUDA only): see ``ktui.worker.timing.bench``.

        Every timed call gets fresh input contents, generated outside the timed region from a new seed and copied
        into the same buffers (a kernel that caches its output by input pointer or content cannot replay it); the
        output of the last timed call is kept for ``bench_sample`` (the re-check) with the seed that made its
        inputs.
        """
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        results: list[BenchSpecTiming] = []
        self.bench_last.clear()
        for n, idx in enumerate(params["spec_indices"]):
            spec = problem.benchmarks[idx]
            progress({"done": n, "total": len(params["spec_indices"]), "case": f"benchmark spec={spec_label(spec)}"})
            base = params["seed"]
            data = problem.generate(base, spec, self.device)
            state = {"seed": base}

            def refresh(
                rep: int, spec: dict[str, Any] = spec, data: Any = data, base: int = base, state: dict[str, int] = state
            ) -> None:
                state["seed"] = base + 1 + rep
                copy_into(data, problem.generate(state["seed"], spec, self.device))

            try:
                stats, last = bench(lambda: fn(data), self.device, before=refresh)  # noqa: F821 - freed after timing
            except BaseException as exc:
                reraise_as_case(exc, f"benchmark spec={spec_label(spec)}")
            self.bench_last[idx] = {"seed": state["seed"], "out": last}
            leaves: list[OutputShape] = [
                {"path": p, "shape": list(t.shape), "numel": t.numel()} for p, t in flatten(last) if is_plain_tensor(t)
            ]
            results.append({"spec_index": idx, **stats, "final_seed": state["seed"], "leaves": leaves})
            del data
            progress({"done": n + 1, "total": len(params["spec_indices"])})
        return {"specs": results}

    def do_bench_sample(self, params: BenchSampleRequest, progress: OnProgress) -> BenchSampleReply:
        """The elements at ``indices`` (flat, per output leaf) of each spec's last timed output, as raw files."""
        out_dir = Path(params["out_dir"])
        samples: list[SampledSpec] = []
        for item in params["specs"]:
            kept = self.bench_last.get(item["spec_index"])
            if kept is None:
                raise KeyError(f"no benchmark output kept for spec {item['spec_index']}")
            leaves = dict((p, t) for p, t in flatten(kept["out"]) if is_plain_tensor(t))
            files: dict[str, SampleFile] = {}
            for path, idx in item["indices"].items():
                t = leaves[path]
                picked = t.reshape(-1)[torch.tensor(idx, dtype=torch.int64, device=t.device)]
                f = out_dir / f"bench{item['spec_index']}_{len(files)}.bin"
                f.write_bytes(tensor_bytes(picked))
                files[path] = {"file": f.name, "dtype": str(t.dtype).removeprefix("torch.")}
            samples.append({"spec_index": item["spec_index"], "seed": kept["seed"], "files": files})
        self.bench_last.clear()
        torch.cuda.empty_cache()
        return {"specs": samples}

    def do_host_loop(self, params: HostLoopRequest, progress: OnProgress) -> HostLoopReply:
        """``calls`` iterations of fresh inputs (``seed + 1 + i``, copied into the same buffers), a call and a device
        synchronize (``timing.host_loop``); ``run_kernel: False`` runs the same loop without the calls. ktui's own
        process times both requests from outside and takes the difference, so neither events on the wrong stream,
        nor a patched timer, nor a memo of the last call's output (every call has new inputs) can hide the work.
        The last call's output is kept for ``bench_sample`` (its seed is ``final_seed``)."""
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        idx, calls, base = params["spec_index"], params["calls"], params["seed"]
        spec = problem.benchmarks[idx]
        data = problem.generate(base, spec, self.device)
        fn(data)
        self._sync()

        def refresh(i: int) -> None:
            copy_into(data, problem.generate(base + 1 + i, spec, self.device))

        run_kernel = params.get("run_kernel", True)
        reply, last = host_loop(lambda: fn(data), refresh, calls, run_kernel, self._sync)
        if run_kernel and calls:
            self.bench_last[idx] = {"seed": base + calls, "out": last}
            leaves: list[OutputShape] = [
                {"path": p, "shape": list(t.shape), "numel": t.numel()} for p, t in flatten(last) if is_plain_tensor(t)
            ]
            return {**reply, "final_seed": base + calls, "leaves": leaves}
        return reply

    def do_ping(self, params: PingRequest, progress: OnProgress) -> PingReply:
        """Nothing: the worker is alive and serving."""
        return {}
