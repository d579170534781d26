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
    Launch,
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
from ktui.worker.cases import build_input, case_label
from ktui.worker.errors import CaseFailed, KernelError
from ktui.worker.problem import ProblemCache, inputs_only, load_module, spec_label
from ktui.worker.tensors import decoy_, flatten, hash_data, poison_, save_outputs, tensor_bytes
from ktui.worker.timing import bench

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


def aliases(out: Any, inputs: Any) -> list[str]:
    """``out[0] aliases in[1]`` for every output tensor whose storage overlaps an input tensor's storage."""
    spans = []
    for path, t in flatten(inputs, "in"):
        if isinstance(t, torch.Tensor) and t.numel():
            s = t.untyped_storage()
            spans.append((path, s.data_ptr(), s.data_ptr() + s.nbytes(), t.device))
    found = []
    for path, t in flatten(out):
        if not isinstance(t, torch.Tensor) or not t.numel():
            continue
        s = t.untyped_storage()
        lo, hi = s.data_ptr(), s.data_ptr() + s.nbytes()
        for ipath, ilo, ihi, dev in spans:
            if dev == t.device and lo < ihi and ilo < hi:
                found.append(f"{path} aliases {ipath}")
    return found


def _public(rec: dict[str, Any]) -> Launch:
    """A capture record without its private keys (``_compiled``, ``_key``): what a reply lists."""
    # cast: capture builds each record from Launch's keys plus the private ones dropped here.
    return cast(Launch, {k: v for k, v in rec.items() if not k.startswith("_")})


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
        self.baseline = integrity.fingerprint()

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _load(self, k: KernelSource) -> Callable[[Any], Any]:
        """Import the kernel snapshot (fresh, under a name unique to its content) and return ``custom_kernel``."""
        if "cutlass" in Path(k["path"]).read_text(errors="replace"):
            capture.install_cute(has_gpu=self.device == "cuda")
        search = Path(k["search_dir"]) if k.get("search_dir") else None
        self.module = load_module(Path(k["path"]), f"ktui_candidate_{k['sha'][:16]}", search)
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
            "launches": [_public(rec) for rec in cap.launches],
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
        try:
            with capture.capturing(cap):
                fn(data)
        except BaseException as exc:
            reraise_as_case(exc, f"spec={spec_label(spec)}")
        self._sync()
        out_dir = Path(params["dumps_dir"])
        out_dir.mkdir(parents=True, exist_ok=True)
        launches: list[Launch] = []
        for i, rec in enumerate(cap.launches):
            compiled = rec.get("_compiled")
            base = f"{i}-{rec.get('kernel', 'kernel')}"
            files: dict[str, str] = {}
            if rec["language"] == "triton" and compiled is not None:
                for stage, blob in getattr(compiled, "asm", {}).items():
                    if stage == "source":
                        continue
                    f = out_dir / f"{base}.{stage}"
                    f.write_bytes(blob if isinstance(blob, bytes) else str(blob).encode())
                    files[stage] = f.name
            elif rec["language"] == "cutedsl" and compiled is not None:
                art = getattr(compiled, "artifacts", None)
                for stage, attr in (("ptx", "PTX"), ("cubin", "CUBIN")):
                    blob = getattr(art, attr, None)
                    if blob:
                        f = out_dir / f"{base}.{stage}"
                        f.write_bytes(blob if isinstance(blob, bytes) else str(blob).encode())
                        files[stage] = f.name
            launches.append({**_public(rec), "files": files})
        return {"launches": launches, "spec": spec, "warnings": cap.warnings}

    def _call(self, fn: Callable[[Any], Any], data: Any, case: Case) -> tuple[Any, float]:
        self._sync()
        t0 = time.perf_counter()
        decoy = case["seed"] if case.get("fill") == "decoy" else None
        with allocation.poisoned_allocations(decoy), capture.pinned_config(case.get("config", 0)):
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
        threads_before = threading.active_count()
        for i, case in enumerate(cases):
            if case.get("fresh"):
                fn = self._load(params["kernel"])  # a second phase, from a fresh module again
            label = case_label(spec_label(problem.tests[case["spec_index"]]), case)
            entry = cast(ExecutedCase, dict(case))  # cast: a copy of the Case; ExecutedCase adds only optional keys
            for rep in range(case.get("repeat", 1)):
                data = build_input(problem, case, self.device)
                for j, buf in enumerate(problem.output_buffers(data)):
                    if case.get("fill") == "decoy":
                        decoy_(buf, case["seed"] + 7919 * (j + 1))
                    else:
                        poison_(buf)
                inputs = inputs_only(problem, data)
                h_before = hash_data(inputs)
                try:
                    out, seconds = self._call(fn, data, case)
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    if case.get("layout", "contiguous") != "contiguous" and not isinstance(exc, SystemExit):
                        self._sync()
                        entry["unsupported"] = (
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                            if str(exc)
                            else type(exc).__name__
                        )
                        break
                    reraise_as_case(exc, label)
                folder = out_dir / f"case{i}" / (f"repeat{rep}" if rep else "")
                leaves = save_outputs(out, folder)
                if rep == 0:
                    entry.update(
                        {
                            "seconds": round(seconds, 6),
                            "input_hash_before": h_before,
                            "input_hash_after": hash_data(inputs),
                            "outputs": leaves,
                            "aliases": aliases(out, inputs),
                        }
                    )
                    if all(leaf["kind"] != "other" for leaf in leaves):  # a meta or sparse output has no bytes
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
                {"path": p, "shape": list(t.shape), "numel": t.numel()}
                for p, t in flatten(last)
                if isinstance(t, torch.Tensor)
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
            leaves = dict((p, t) for p, t in flatten(kept["out"]) if isinstance(t, torch.Tensor))
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
        """``calls`` back-to-back calls on one input set, then a device synchronize: ktui's own process times this
        request from outside, so neither events on the wrong stream nor a patched timer can hide the work."""
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        spec = problem.benchmarks[params["spec_index"]]
        data = problem.generate(params["seed"], spec, self.device)
        fn(data)
        self._sync()
        t_ready = time.perf_counter()
        for _ in range(params["calls"]):
            fn(data)
        t_queued = time.perf_counter()
        self._sync()
        return {"calls": params["calls"], "inner_s": time.perf_counter() - t_ready, "enqueue_s": t_queued - t_ready}

    def do_ping(self, params: PingRequest, progress: OnProgress) -> PingReply:
        """Nothing: the worker is alive and serving."""
        return {}


def copy_into(dst: Any, src: Any) -> None:
    """Copy every tensor of ``src`` into the tensor at the same place in ``dst`` (same structure)."""
    for (_, d), (_, s) in zip(flatten(dst), flatten(src)):
        if isinstance(d, torch.Tensor) and isinstance(s, torch.Tensor):
            d.copy_(s)
