"""The candidate worker: imports a kernel version, compiles it, runs it, times it. It never sees a reference output.

Requests (``params`` keys): every request names the ``reference`` snapshot (``problem``, ``path``, ``sha``,
``search_dir``); ``compile`` also names the ``kernel`` snapshot (``name``, ``path``, ``sha``, ``search_dir``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import torch

from ktui.engine import capture
from ktui.engine.problem import ProblemCache, inputs_only, load_module, spec_label
from ktui.engine.server import CaseFailed
from ktui.engine.tensors import hash_data, poison_, save_outputs
from ktui.engine.timing import bench

Progress = Callable[[dict[str, Any]], None]


def _spec_size(spec: dict[str, Any]) -> int:
    """The product of a spec's integer values: a proxy for its size that needs no input data."""
    size = 1
    for v in spec.values():
        if isinstance(v, int) and not isinstance(v, bool):
            size *= max(v, 1)
    return size


COMPILER_MODULES = ("triton.compiler", "triton.language", "triton.backends", "cutlass", "mlir")


def is_compile_error(exc: BaseException) -> bool:
    """An exception raised by a compiler (Triton's frontend, ptxas, CuTeDSL) rather than by host code."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith(COMPILER_MODULES) or cls.__name__ in ("CompilationError", "PTXASError"):
            return True
    return "ptxas" in str(exc).lower()


class KernelError(Exception):
    """The kernel module does not have what ktui needs (``custom_kernel``)."""


class Candidate:
    """Handlers of the ``candidate`` role, and of the ``compiler`` role (``cross=True``: compile for sm_90a without a
    GPU and without the Triton interpreter; it serves only ``compile``)."""

    def __init__(self, device: str, cross: bool = False):
        self.device = device
        self.cross = cross
        self.problems = ProblemCache()
        self.module = None
        self.kernel_sha: str | None = None
        capture.install_triton()
        if device == "cpu" and not cross:
            from ktui.engine import interp_fixes

            interp_fixes.install()

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _load(self, k: dict[str, Any]) -> Callable[[Any], Any]:
        """Import the kernel snapshot (fresh, under a name unique to its content) and return ``custom_kernel``."""
        if "cutlass" in Path(k["path"]).read_text(errors="replace"):
            capture.install_cute(has_gpu=self.device == "cuda")
        search = Path(k["search_dir"]) if k.get("search_dir") else None
        self.module = load_module(Path(k["path"]), f"ktui_candidate_{k['sha'][:16]}", search)
        self.kernel_sha = k["sha"]
        fn = getattr(self.module, "custom_kernel", None)
        if not callable(fn):
            raise KernelError(f"{k['name']} does not define custom_kernel(data)")
        return fn

    def _fn(self, params: dict[str, Any]) -> Callable[[Any], Any]:
        k = params["kernel"]
        if self.module is None or self.kernel_sha != k["sha"]:
            return self._load(k)
        return self.module.custom_kernel

    # -- rungs -------------------------------------------------------------------------------------------------
    def do_compile(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Import the version and call ``custom_kernel`` once in dry mode on the largest test spec (sizes of 1 would
        make Triton compile a special case): every launch is compiled (for this GPU, or for sm_90a from the CPU) and
        none runs. Returns the launches and timings."""
        problem = self.problems.get(params["reference"])
        t0 = time.perf_counter()
        fn = self._load(params["kernel"])
        import_s = time.perf_counter() - t0
        spec = max(problem.tests, key=_spec_size)
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
                raise CaseFailed(f"spec={spec_label(spec)}: {type(exc).__name__}: {exc}") from exc
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
            "launches": [{k: v for k, v in rec.items() if not k.startswith("_")} for rec in cap.launches],
            "warnings": warnings,
        }

    def do_execute(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Call ``custom_kernel`` on each case (``spec_index``, ``seed``) and write its outputs under ``out_dir``.

        Declared output buffers are filled with the poison NaN first. Each case reports the input hash before and
        after the call (the judge compares them with its own) and the call's wall time (synchronized).
        """
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        out_dir = Path(params["out_dir"])
        results = []
        cases = params["cases"]
        for i, case in enumerate(cases):
            spec = problem.tests[case["spec_index"]]
            seed = case["seed"]
            data = problem.generate(seed, spec, self.device)
            for buf in problem.output_buffers(data):
                poison_(buf)
            h_before = hash_data(inputs_only(problem, data))
            self._sync()
            t0 = time.perf_counter()
            try:
                out = fn(data)
                self._sync()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise CaseFailed(f"spec={spec_label(spec)} seed={seed}: {type(exc).__name__}: {exc}") from exc
            seconds = time.perf_counter() - t0
            results.append({
                "spec_index": case["spec_index"],
                "seed": seed,
                "seconds": round(seconds, 6),
                "input_hash_before": h_before,
                "input_hash_after": hash_data(inputs_only(problem, data)),
                "outputs": save_outputs(out, out_dir / f"case{i}"),
            })
            progress({"done": i + 1, "total": len(cases)})
        return {"cases": results}

    def do_benchmark(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Time ``custom_kernel`` on each benchmark spec (CUDA only): see ``ktui.engine.timing.bench``."""
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        results = []
        for n, idx in enumerate(params["spec_indices"]):
            spec = problem.benchmarks[idx]
            data = problem.generate(params["seed"], spec, self.device)
            try:
                stats = bench(lambda: fn(data), self.device)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise CaseFailed(f"benchmark spec={spec_label(spec)}: {type(exc).__name__}: {exc}") from exc
            results.append({"spec_index": idx, **stats})
            del data
            progress({"done": n + 1, "total": len(params["spec_indices"])})
        if self.device == "cuda":
            torch.cuda.empty_cache()
        return {"specs": results}
