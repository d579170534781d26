"""The traced program: ``python -m ktui.worker.trace_target PARAMS.json`` (the trace rung runs it, on a GPU).

In one fresh process, on one benchmark spec's inputs:

1. the version as every other rung builds it (its ``ktui.trace`` markers compile to nothing) is timed with CUDA
   events, L2 flushed between calls (``ktui.worker.timing.bench``, the benchmark's method): the *untraced* time;
2. the tracer is activated (``ktui.trace.state``; Triton's ``instrumentation_mode`` set to a token unique to this
   process, and Triton's and CuTeDSL's caches pointed at the out dir by the rung, so no traced build is ever reused
   elsewhere), the version is imported again under another name so every kernel compiles anew, with its markers,
   and timed the same way: the *traced* time;
3. every trace buffer is zeroed and the version is called once more: the recorded call. Each buffer is written to
   the out dir, header and records up to the last one written, and ``trace.json`` (``ktui.protocol.trace``) says
   which kernel it belongs to, its region names and how many times the call launched it.

With ktui's tracer a tiny Triton kernel of empty regions is traced too (``calibration``): the median cycles of an
empty region is what one marker costs a warp. With ``tracer = "proton"`` the markers become Proton scopes
(``triton.profiler.language``, Triton kernels only): Proton's instrumentation session covers step 2 and 3 and its
Chrome trace is written instead of buffers. A traced time is never the benchmark's: it is reported beside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ktui.protocol.trace import TracedKernel, TraceOutput, TraceParams, TraceTiming

CALIBRATION = "ktui_marker_calibration"


def main() -> None:
    """Run the three steps on the params file (``ktui.protocol.trace.TraceParams``) and write ``trace.json``."""
    p: TraceParams = json.loads(Path(sys.argv[1]).read_text())
    import torch

    from ktui.worker.problem import Problem, load_module
    from ktui.worker.server import nvml_facts
    from ktui.worker.timing import flush_buffer

    out = Path(p["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    ref, k = p["reference"], p["kernel"]
    problem = Problem(Path(ref["path"]), ref["problem"], ref["sha"])
    data = problem.generate(p["seed"], dict(p["spec"]), "cuda")
    search = Path(k["search_dir"]) if k.get("search_dir") else None
    plain = load_module(Path(k["path"]), f"ktui_untraced_{k['sha'][:16]}", search)
    warnings: list[str] = []
    untraced = _time(lambda: plain.custom_kernel(data), p["reps"])

    tracer, counting, memory = _activate(p)
    traced_mod = load_module(Path(k["path"]), f"ktui_traced_{k['sha'][:16]}", search)
    if p["tracer"] == "proton":
        traced, kernels, extra = _proton(out, lambda: traced_mod.custom_kernel(data), warnings)
    else:
        traced = _time(lambda: traced_mod.custom_kernel(data), p["reps"])
        for b, t in zip(tracer.buffers, memory):
            b.launches = 0
            t.zero_()
        flush_buffer("cuda").zero_()  # the recorded call reads its inputs from HBM, as every timed call does
        counting["on"] = True
        traced_mod.custom_kernel(data)
        torch.cuda.synchronize()
        counting["on"] = False
        _calibrate(tracer, memory)
        kernels = _write_buffers(tracer, memory, out)
        extra = {}
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    result_doc: TraceOutput = {
        "tracer": p["tracer"],
        "untraced": untraced,
        "traced": traced,
        "kernels": kernels,
        "sm_count": int(props.multi_processor_count),
        "device_name": str(props.name),
        "warnings": warnings,
        **extra,  # type: ignore[typeddict-item]  # proton_trace only
    }
    clock = nvml_facts(dev).get("sm_clock_mhz")
    if clock:
        result_doc["sm_clock_mhz"] = int(clock)
    (out / "trace.json").write_text(json.dumps(result_doc))
    print("ktui-trace-target: ok", flush=True)


def _time(fn: Any, reps: int) -> TraceTiming:
    from ktui.worker.timing import bench

    stats, _ = bench(fn, "cuda", min_reps=reps, max_reps=reps, warmup_ms=10.0)
    return {k: stats[k] for k in ("median_us", "p25_us", "p75_us", "reps")}  # type: ignore[return-value]


def _activate(p: TraceParams) -> tuple[Any, dict[str, bool], list[Any]]:
    """Activate the tracer and the hooks that tell it which kernel compiles and count the recorded launches.
    Returns the tracer, the switch of the launch counting, and the buffers' memory (in the tracer's order)."""
    import torch

    from ktui.trace import state

    keep: list[Any] = []

    def allocate(nbytes: int) -> int:
        t = torch.zeros(nbytes, dtype=torch.uint8, device="cuda")
        keep.append(t)
        return int(t.data_ptr())

    tracer = state.Tracer(p["tracer"], allocate, p["buffer_bytes"])
    state.activate(tracer)
    counting = {"on": False}
    try:
        import triton

        if p["tracer"] == "ktui":
            triton.knobs.compilation.instrumentation_mode = f"ktui-trace-{tracer.token}"
        _hook_triton(tracer, counting)
    except ImportError:
        pass
    _hook_cute(tracer, counting)  # False without CuTeDSL: only Triton kernels can be traced then
    return tracer, counting, keep


def _hook_triton(tracer: Any, counting: dict[str, bool]) -> None:
    from triton.runtime.jit import JITFunction

    orig = JITFunction.run
    owners: dict[int, tuple[Any, Any]] = {}  # id(compiled kernel) -> (the kernel, its buffer)

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        tracer.begin_compile(getattr(self, "__name__", "kernel"), "triton")
        kernel = orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        buf = tracer.compiled_buffer()
        if kernel is not None:
            if buf is not None:
                owners[id(kernel)] = (kernel, buf)
            owned = owners.get(id(kernel))
            if owned is not None and counting["on"] and not warmup:
                owned[1].launches += 1
        return kernel

    JITFunction.run = run  # this process only: it exists to trace


def _hook_cute(tracer: Any, counting: dict[str, bool]) -> bool:
    try:
        from cutlass.base_dsl.compiler import CompileCallable
    except ImportError:
        return False
    orig = CompileCallable.__call__

    class Counted:
        def __init__(self, compiled: Any, buf: Any):
            self._compiled, self._buf = compiled, buf

        def __call__(self, *a: Any, **kw: Any) -> Any:
            if counting["on"]:
                self._buf.launches += 1
            return self._compiled(*a, **kw)

        def __getattr__(self, item: str) -> Any:
            return getattr(self._compiled, item)

    def compile_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        fn = args[0] if args else None
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "func", None), "__name__", "cute_kernel")
        tracer.begin_compile(str(name), "cutedsl")
        compiled = orig(self, *args, **kwargs)
        buf = tracer.compiled_buffer()
        return compiled if buf is None else Counted(compiled, buf)

    CompileCallable.__call__ = compile_call  # type: ignore[method-assign, unused-ignore]
    return True


def _calibrate(tracer: Any, memory: list[Any]) -> None:
    """Trace the empty regions of ``ktui.worker.trace_calibration`` on 4 CTAs per SM (one wave), recorded like a
    kernel named ``CALIBRATION``."""
    try:
        import torch

        from ktui.worker import trace_calibration
    except ImportError:
        return
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    trace_calibration.launch(4 * sms)  # compiles (allocating its buffer) and warms up
    torch.cuda.synchronize()
    buf = tracer.buffers[-1]
    memory[-1].zero_()
    buf.kernel, buf.launches = CALIBRATION, 1
    trace_calibration.launch(4 * sms)
    torch.cuda.synchronize()


def _write_buffers(tracer: Any, memory: list[Any], out: Path) -> list[TracedKernel]:
    """Each buffer's header and records up to the last one written, as ``<i>-<kernel>.ktrace``."""
    import torch

    from ktui.protocol.trace import HEADER_BYTES, RECORD_BYTES
    from ktui.worker.tensors import tensor_bytes

    kernels: list[TracedKernel] = []
    for i, (buf, mem) in enumerate(zip(tracer.buffers, memory)):
        recs = mem[HEADER_BYTES:].view(torch.int64).view(-1, RECORD_BYTES // 8)
        written = torch.nonzero(recs[:, 0]).flatten()
        n = int(written.max().item()) + 1 if written.numel() else 0
        name = f"{i}-{buf.kernel}.ktrace"
        (out / name).write_bytes(tensor_bytes(mem[: HEADER_BYTES + n * RECORD_BYTES]))
        entry: TracedKernel = {
            "kernel": buf.kernel,
            "language": buf.language,
            "regions": list(buf.regions),
            "file": name,
            "buffer_bytes": buf.nbytes,
            "launches": buf.launches,
        }
        if buf.kernel == CALIBRATION:
            entry["calibration"] = True
        kernels.append(entry)
    return kernels


def _proton(out: Path, call: Any, warnings: list[str]) -> tuple[TraceTiming, list[TracedKernel], dict[str, str]]:
    """Proton's instrumentation mode (Triton's own intra-kernel profiler) around a compile call and one recorded,
    event-timed call; its Chrome trace goes to ``proton.chrome_trace``. The traced time is that one call's."""
    import torch
    import triton.profiler as proton
    import triton.profiler.language as pl

    from ktui.worker.timing import flush_buffer

    pl.enable_semantic("triton")
    name = out / "proton"
    proton.start(str(name), backend="instrumentation", data="trace")
    try:
        call()  # compiles with the scopes (and runs once: its events are dropped, each CTA's last launch is kept)
        torch.cuda.synchronize()
        flush_buffer("cuda").zero_()
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]  # unannotated in torch
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) * 1e3
    finally:
        proton.finalize(output_format="chrome_trace")
    found = sorted(out.glob("proton*.chrome_trace")) or sorted(out.glob("proton*.json"))
    if not found:
        warnings.append("Proton wrote no Chrome trace (did the kernels mark any pl scope?)")
        return {"median_us": us, "p25_us": us, "p75_us": us, "reps": 1}, [], {}
    return (
        {"median_us": us, "p25_us": us, "p75_us": us, "reps": 1},
        [],
        {"proton_trace": found[-1].name},
    )


if __name__ == "__main__":
    main()
