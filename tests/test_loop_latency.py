"""benchmarks/loop_latency.py: its cold path runs exactly the cases the warm path (a ktui ladder) runs, and judges
them.

The warm side is the real ladder on the shared CPU pool with the benchmark's own options (``ladder_options``); the
cases it plans are read off the compile rung (``RunContext.cases``, recorded by wrapping the rung) and its figures
(the run rung's ``calls`` and ``seeds``, the correctness rung's ``cases`` per spec). The cold side is the benchmark's
``cold_plan`` on the same workspace and seed, and ``run_plan``, which the cold process runs, in this process on the
Triton interpreter.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ktui.core.results import Status

from .conftest import ROOT

K = Path(__file__).resolve().parent / "cases" / "kernels"
SEED = 4242


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loop_latency", ROOT / "benchmarks" / "loop_latency.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["loop_latency"] = mod
    spec.loader.exec_module(mod)
    return mod


LL = _benchmark()

# An autotuned vector add whose second config adds 1 everywhere: wrong only while that config is the one launched.
OFF_BY_CONFIG = """
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"OFF": 0}), triton.Config({"OFF": 1})], key=["n"])
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, OFF: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask) + OFF, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
"""


@pytest.fixture
def planned(monkeypatch):
    """The case plan of every ladder run in the test (``RunContext.cases`` after the compile rung, autotune cases
    included), in order."""
    from ktui.core.ladder import runner

    seen: list[list[dict]] = []
    compile_rung = runner.RUNG_IMPLS["compile"]

    def compile_and_record(ctx):
        rr = compile_rung(ctx)
        seen.append([dict(c) for c in ctx.cases or []])
        return rr

    monkeypatch.setitem(runner.RUNG_IMPLS, "compile", compile_and_record)
    return seen


@pytest.fixture
def interpreter(monkeypatch):
    """Triton kernels imported in this process run in the interpreter; ktui's autotune hooks, which ``run_plan``
    installs for an autotuned kernel, are undone after the test."""
    from triton.runtime import autotuner

    from ktui.worker import capture

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(autotuner.Autotuner, "run", autotuner.Autotuner.run)
    if hasattr(autotuner.Autotuner, "_bench"):
        monkeypatch.setattr(autotuner.Autotuner, "_bench", autotuner.Autotuner._bench)
    monkeypatch.setattr(capture, "_INSTALLED", set(capture._INSTALLED))


def _ladder(ws, pool, options):
    from ktui.core.ladder import Ladder

    lad = Ladder(ws, pool, options=options)
    try:
        return lad.run(ws.kernel(ws.root / "kernels" / "vector_add" / "v2.py"))
    finally:
        lad.close()


@pytest.mark.parametrize("source", [None, K / "autotune_good.py"], ids=["example-v2", "autotuned"])
def test_cold_plan_is_the_plan_the_warm_ladder_runs(make_ws, cpu_pool, planned, interpreter, source):
    """With the benchmark's own options and a pinned seed, ``cold_plan`` gives the very case list the ladder's
    compile rung planned (fuzzed specs, covering design and, for an autotuned kernel, the config cases included)."""
    ws = make_ws(["vector_add"], None if source is None else {"vector_add/v2": source})
    options = LL.ladder_options(SEED)
    options.rungs = ("compile",)
    res = _ladder(ws, cpu_pool, options)
    assert res.rung("compile").status is Status.OK, res.rung("compile").summary
    plan = LL.cold_plan(ws.root, "vector_add/v2", "cpu", LL.ladder_options(SEED))
    assert len(planned) == 1
    assert plan.cases == planned[0]
    assert plan.configs == res.rung("compile").figures["autotune_configs"]
    assert plan.configs == (0 if source is None else 2)
    assert any("fuzzed" in label for label, _ in LL.cold_case_labels(plan))
    assert any(c.get("config") == "auto" for c in plan.cases) is (source is not None)


def test_cold_path_runs_and_judges_the_cases_the_warm_ladder_reports(make_ws, cpu_pool, planned, interpreter):
    """A full warm ladder (compile, run, correctness) on vector_add/v2 reports, per spec, the case counts of the
    cold plan and the seeds it planned (the burst's spec also the seed of one of its calls); the cold path's
    ``run_plan`` runs those cases, every call judged and passing. Distributions and layouts off to stay fast."""
    options = LL.ladder_options(SEED)
    options.distributions = options.layouts = False
    ws = make_ws(["vector_add"])
    res = _ladder(ws, cpu_pool, options)
    corr = res.rung("correctness")
    assert corr.status is Status.OK, corr.summary
    cold_options = LL.ladder_options(SEED)
    cold_options.distributions = cold_options.layouts = False
    plan = LL.cold_plan(ws.root, "vector_add/v2", "cpu", cold_options)
    assert plan.cases == planned[0]
    run_figs = res.rung("run").figures
    assert run_figs["calls"] == len(plan.cases)
    assert run_figs["seeds"] == sorted({c["seed"] for c in plan.cases})
    assert corr.figures["cases"] == len(plan.cases)
    warm_specs = {s["label"]: s for s in corr.figures["specs"]}
    assert {label: s["cases"] for label, s in warm_specs.items()} == LL.per_spec(plan)
    labels = LL.cold_case_labels(plan)
    for label, spec in warm_specs.items():
        mine = [c for (lab, _), c in zip(labels, plan.cases, strict=True) if lab == label]
        plain = {c["seed"] for c in mine if not c.get("calls")}
        burst = [range(c["seed"], c["seed"] + c["calls"]) for c in mine if c.get("calls")]
        extra = set(spec["seeds"]) - plain
        assert plain <= set(spec["seeds"]), label
        assert all(any(s in r for r in burst) for s in extra), (label, extra)
    cold = LL.run_plan(plan, "cpu")
    assert cold["failures"] == []
    assert cold["ok"] is True
    assert cold["cases"] == len(plan.cases)
    repeats = sum(c.get("repeat", 1) - 1 for c in plan.cases)
    bursts = sum(c["calls"] - 1 for c in plan.cases if c.get("calls"))
    assert cold["calls"] == len(plan.cases) + repeats + bursts
    assert cold["judged"] + cold["skipped"] == cold["calls"]
    assert cold["judged"] > 0


def test_cold_path_pins_each_autotune_config_as_the_candidate_does(make_ws, interpreter):
    """An autotuned kernel wrong only in its second config fails the cold check on the config cases, naming
    ``config=1``; its honest twin (both configs right) passes the same cases."""
    results = {}
    for name, source in (("bad", OFF_BY_CONFIG), ("good", (K / "autotune_good.py").read_text())):
        ws = make_ws(["vector_add"], {"vector_add/v2": source}, name=name)
        options = LL.ladder_options(SEED)
        options.distributions = options.layouts = False
        plan = LL.cold_plan(ws.root, "vector_add/v2", "cpu", options)
        assert plan.configs == 2
        plan.cases = [c for c in plan.cases if c.get("config") == 1][:3]
        assert len(plan.cases) == 3
        results[name] = LL.run_plan(plan, "cpu")
    assert results["bad"]["ok"] is False
    assert "config=1" in results["bad"]["failures"][0]
    assert "elements outside atol=1e-06 rtol=1e-06" in results["bad"]["failures"][0]
    assert results["good"]["ok"] is True
    assert results["good"]["judged"] == 3
