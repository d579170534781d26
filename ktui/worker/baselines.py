"""The torch baselines a version's time is compared with beside the reference's (``ktui eval``): torch eager and
``torch.compile``, timed in the judge (it owns the reference; no candidate code runs there) on the inputs the
reference is timed on, the same way (``timing.bench``: fresh inputs per call, L2 flushed, CUDA events).

- **torch eager**: the reference module's ``eager(data)`` when it defines one (an imported KernelBench problem
  does: ``Model.forward`` with the given weights, without the ``functional_call`` its ``ref_kernel`` goes through,
  which is KernelBench's eager baseline), else ``ref_kernel`` itself (its time is the reference's).
- **torch.compile**: ``torch.compile(<that function>, dynamic=False)`` in its default mode (inductor), compiled
  afresh per benchmark spec (``torch._dynamo.reset()`` first, so one spec's graphs and dynamic-shape decisions do not
  carry into the next, nor the recompile limit), its first call (the compilation) untimed. KernelBench reports the
  same baseline (``results/timing/*/baseline_time_torch_compile_inductor_default.json``). A reference that dynamo or
  inductor cannot compile gets ``compile_error`` instead of a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ktui.protocol import OnProgress, TimingStats
from ktui.worker.problem import Problem
from ktui.worker.timing import bench


def eager_function(problem: Problem) -> tuple[Callable[[Any], Any], str]:
    """The torch eager baseline of ``problem`` and where it comes from: (the module's ``eager``, ``"eager"``) or
    (``ref_kernel``, ``"ref_kernel"``)."""
    fn = getattr(problem.module, "eager", None)
    if callable(fn):
        return fn, "eager"
    return problem.module.ref_kernel, "ref_kernel"


def time_baselines(
    problem: Problem,
    data: Any,
    device: str,
    refresh: Callable[[int], None],
    ref_stats: TimingStats,
    progress: OnProgress,
) -> dict[str, Any]:
    """``eager_median_us``, ``eager_source`` and ``compiled_median_us`` (with ``compile_s``, the compilation's
    seconds) or ``compile_error``, in µs per call, on ``data`` refreshed by ``refresh`` between calls (the
    reference's own timing, ``ref_stats``, is the eager one when the module defines no ``eager``).

    Raises:
        ValueError: ``device`` is not a GPU (``timing.bench`` times CUDA work only).
    """
    fn, source = eager_function(problem)
    out: dict[str, Any] = {"eager_source": source}
    if source == "eager":
        stats, _ = bench(lambda: fn(data), device, before=refresh)
        out["eager_median_us"] = stats["median_us"]
    else:
        out["eager_median_us"] = ref_stats["median_us"]
    progress({"done": 0, "total": 1, "case": f"torch.compile of {source}"})  # a compilation can take a minute
    import torch._dynamo

    torch._dynamo.reset()
    try:
        compiled = torch.compile(fn, dynamic=False)
        t0 = time.perf_counter()
        compiled(data)
        torch.cuda.synchronize(device)
        out["compile_s"] = round(time.perf_counter() - t0, 3)
        progress({"done": 1, "total": 1, "case": f"torch.compile of {source}"})
        stats, _ = bench(lambda: compiled(data), device, before=refresh)
        out["compiled_median_us"] = stats["median_us"]
    except Exception as exc:  # the reference does not compile: no baseline, said so
        text = (str(exc).strip().splitlines() or [""])[0][:300]
        out["compile_error"] = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    finally:
        torch._dynamo.reset()
    return out
