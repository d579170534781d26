"""The candidate's timed calls: ``do_benchmark`` (CUDA events), ``do_host_loop`` (a device-synchronized loop timed
from ktui's process) and ``do_bench_sample`` (elements of the kept timed outputs), a mixin of
``ktui.worker.candidate.Candidate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ktui.protocol import (
    BenchmarkReply,
    BenchmarkRequest,
    BenchSampleReply,
    BenchSampleRequest,
    BenchSpecTiming,
    HostLoopReply,
    HostLoopRequest,
    KernelSource,
    OnProgress,
    OutputShape,
    SampledSpec,
    SampleFile,
    Sources,
)
from ktui.worker.errors import reraise_as_case
from ktui.worker.problem import ProblemCache, spec_label
from ktui.worker.tensors import copy_into, flatten, is_plain_tensor, tensor_bytes
from ktui.worker.timing import bench, host_loop


class TimedCalls:
    """``do_benchmark``, ``do_host_loop`` and ``do_bench_sample``; ``bench_last`` keeps each spec's last timed
    output (with the seed of its inputs) for the re-check."""

    device: str
    problems: ProblemCache
    baseline: dict[str, int]

    if TYPE_CHECKING:  # provided by Candidate

        def _sync(self) -> None: ...
        def _load(self, k: KernelSource) -> Callable[[Any], Any]: ...
        def _fn(self, params: Sources) -> Callable[[Any], Any]: ...

    bench_last: dict[int, dict[str, Any]]

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
