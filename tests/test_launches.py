"""Hidden torch and compile coverage (cases.md hidden-torch; issue 9 points 7 and 8), through the real ladder on the
CPU, each bad kernel with its honest twin.

- The launches each case made are recorded in the candidate (``capture.recording``) and reported per case; a spec
  whose calls launched no Triton or CuTeDSL kernel fails correctness with "times torch, not a kernel" unless the
  reference sets ``allow_torch = True``, naming the torch compute the scan found.
- Every distinct launch the run made is compiled again for sm_90a in the compiler after the calls, so a helper path
  that only sizes other than the dry call's dispatch, and that Hopper cannot compile, fails ``run`` naming the
  launch and the spec.
- The scan's data-flow findings (aliases, operators, ``operator``, ``vars(sys)["modules"]``, stack walks, stream
  APIs under other names, patches through aliases) are warnings of the compile rung with their lines.
"""

from __future__ import annotations

import pytest

from ktui.core.ladder.rungs.run import seen_launches, specs_without_launch
from ktui.core.results import Status

from .conftest import ROOT
from .test_cases import CASES, K, corr, good, run

FAST = {"distributions": False, "layouts": False, "repeat": False, "fuzz": False, "near_duplicates": False}
TIMES_TORCH = "times torch, not a kernel"


def compile_warnings(res):
    return res.rung("compile").warnings


# -- times torch, not a kernel --------------------------------------------------------------------------------------
def test_torch_through_an_operator_above_a_size_times_torch(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "vector_add", K / "torch_operator_bad.py", seed=3, **FAST))
    assert bad.status is Status.FAILED
    assert bad.summary.startswith(
        f"{TIMES_TORCH}: the calls of spec=(4099,) and 1 more spec launched no Triton or CuTeDSL kernel"
    )
    assert "(torch: computes a + b in torch: the + operator on tensors (line 21))" in bad.summary
    assert "allow_torch = True" in bad.summary
    failed = {s["label"] for s in bad.figures["specs"] if not s["ok"]}
    assert failed == {"(4099,)", "(65537,)"}  # 4096 and below launch the kernel
    res = run(make_ws, ladder_for, "vector_add", K / "torch_operator_bad.py", seed=3, **FAST)
    assert "computes a + b in torch: the + operator on tensors (line 21)" in compile_warnings(res)
    # the size the benchmark times (2**28) is never run on the CPU, but the dumps rung's dry call dispatches it
    dumps = res.rung("dumps")
    assert dumps.status is Status.FAILED
    assert dumps.summary.startswith(
        f"{TIMES_TORCH}: custom_kernel launched no Triton or CuTeDSL kernel on spec=(268435456,), the first "
        "benchmark spec (the one timed)"
    )
    twin = good(run(make_ws, ladder_for, "vector_add", K / "torch_operator_good.py", seed=3, **FAST))
    assert not compile_warnings(twin)


def test_torch_through_the_operator_module_times_torch(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "vector_add", K / "operator_module_bad.py", seed=4, **FAST)
    bad = corr(res)
    assert bad.status is Status.FAILED and bad.summary.startswith(f"{TIMES_TORCH}: the calls of spec=(4099,) and 1")
    assert "operator.add (as op.add) on tensors (line 24)" in bad.summary
    twin = good(run(make_ws, ladder_for, "vector_add", K / "operator_module_good.py", seed=4, **FAST))
    assert not compile_warnings(twin)


def test_torch_through_an_alias_times_torch_on_the_wide_specs(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "softmax", K / "torch_alias_bad.py", seed=5, **FAST)
    bad = corr(res)
    assert bad.status is Status.FAILED
    assert bad.summary.startswith(f"{TIMES_TORCH}: the calls of spec=(3, 1025, fp32) and 3 more specs launched no")
    assert "falls back to torch for torch.softmax through _rows (line 24)" in bad.summary
    assert {s["label"] for s in bad.figures["specs"] if not s["ok"]} == {
        "(3, 1025, fp32)",
        "(2, 4099, fp32)",
        "(3, 1025, bf16)",
        "(2, 4099, bf16)",
    }
    assert "falls back to torch for torch.softmax through _rows (line 24)" in compile_warnings(res)
    assert res.rung("dumps").status is Status.FAILED and TIMES_TORCH in res.rung("dumps").summary
    twin = good(run(make_ws, ladder_for, "softmax", K / "torch_alias_good.py", seed=5, **FAST))
    assert not compile_warnings(twin)


def test_the_loaded_reference_reached_through_vars_sys_times_torch(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "softmax", K / "loaded_reference_bad.py", seed=6, **FAST)
    warning = "reaches sys.modules through vars(sys)['modules']: can call the reference module or ktui's (line 10)"
    assert warning in compile_warnings(res)
    bad = corr(res)
    assert bad.status is Status.FAILED
    # it found the reference and returned its answer (no kernel), or did not and copied its input (wrong)
    assert bad.summary.startswith(f"{TIMES_TORCH}: the calls of spec=(1, 1, fp32) and 13 more specs") or any(
        not s["ok"] for s in bad.figures["specs"]
    )
    twin = good(run(make_ws, ladder_for, "softmax", K / "loaded_reference_good.py", seed=6, **FAST))
    assert not compile_warnings(twin)


def test_a_stack_walk_that_hides_behind_torch_under_ktui_fails(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "vector_add", K / "stack_walk_bad.py", seed=7, **FAST)
    assert any(
        w.startswith("walks the call stack with traceback.extract_stack (as _tb.extract_stack)") and "(line 21)" in w
        for w in compile_warnings(res)
    )
    bad = corr(res)
    assert bad.status is Status.FAILED
    # with ktui's frames on the stack it answers in torch (no kernel); with a neutral stack its kernel drops the tail
    assert TIMES_TORCH in bad.summary or "unwritten" in bad.summary
    twin = good(run(make_ws, ladder_for, "vector_add", K / "stack_walk_good.py", seed=7, **FAST))
    assert not compile_warnings(twin)


def test_a_version_that_launches_nothing_fails_unless_the_reference_allows_torch(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "softmax", K / "no_launch_bad.py", seed=8, **FAST))
    assert bad.status is Status.FAILED
    assert bad.summary == (
        f"{TIMES_TORCH}: the calls of spec=(1, 1, fp32) and 13 more specs launched no Triton or CuTeDSL kernel "
        "(torch: falls back to torch for torch.softmax (line 8)); a reference whose versions may compute in torch "
        "sets allow_torch = True"
    )
    assert bad.error is not None and bad.error.type == "TimesTorch"
    ref = CASES / "references" / "softmax_torch_allowed.py"
    allowed = good(run(make_ws, ladder_for, "softmax", K / "no_launch_bad.py", reference=ref, seed=8, **FAST))
    assert "falls back to torch for torch.softmax (line 8)" in compile_warnings(allowed)  # still a warning
    assert "no launches" in allowed.rung("compile").summary
    assert allowed.rung("dumps").summary.startswith("no kernel compiled")


def test_a_wrong_output_keeps_its_own_reason_and_times_torch_becomes_a_warning(make_ws, ladder_for):
    """result_reuse_bad launches nothing and returns unwritten memory: correctness says so, not "times torch"."""
    bad = corr(run(make_ws, ladder_for, "vector_add", K / "result_reuse_bad.py", seed=9, **FAST))
    assert bad.status is Status.FAILED
    assert "unwritten" in bad.summary and TIMES_TORCH not in bad.summary
    assert bad.warnings[0].startswith(f"{TIMES_TORCH}: the calls of spec=(1,) and 6 more specs")


# -- stream APIs and patches under other names ----------------------------------------------------------------------
def test_stream_apis_imported_under_other_names_are_reported(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "vector_add", K / "stream_alias_bad.py", seed=10, **FAST)
    w = compile_warnings(res)
    assert (
        "calls torch.cuda.Stream (as Stream): work on another stream escapes events on the current one (line 23)" in w
    )
    assert (
        "calls torch.cuda.stream (as stream): work on another stream escapes events on the current one (line 24)" in w
    )
    good(res)  # on the CPU the side stream is never taken: a warning, the GPU's timing checks judge the rest
    twin = good(run(make_ws, ladder_for, "vector_add", K / "stream_alias_good.py", seed=10, **FAST))
    assert not compile_warnings(twin)


def test_a_patch_through_a_module_alias_is_reported_and_fails(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "vector_add", K / "patch_alias_bad.py", seed=11, **FAST)
    assert (
        "assigns time.perf_counter through _clock: patching torch, time, triton or ktui fools later checks (line 23)"
        in compile_warnings(res)
    )
    assert not res.ok  # the worker is found patched: the rungs it served fail
    assert "time.perf_counter" in " ".join(r.summary + (r.error.message if r.error else "") for r in res.rungs)
    twin = good(run(make_ws, ladder_for, "vector_add", K / "patch_alias_good.py", seed=11, **FAST))
    assert not compile_warnings(twin)


# -- compile coverage ------------------------------------------------------------------------------------------------
def test_a_helper_path_only_other_sizes_dispatch_is_compiled_for_sm90a(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "softmax", K / "compile_helper_bad.py", seed=12, **FAST)
    assert res.rung("compile").status is Status.OK  # the dry call (2, 4099) takes the chunked kernel
    r = res.rung("run")
    assert r.status is Status.FAILED
    assert r.error is not None
    assert r.error.type == "CompilationError"
    # (1, 1) compiles (n_cols == 1 is a constexpr, which float() takes); (33, 64) passes it as an i32
    assert r.error.message.startswith("compile: the launch narrow_kernel(*")
    assert "i32:16, ROWS=8, COLS=64) that spec=(33, 64, " in r.error.message
    assert ") dispatched, compiled for sm_90a: CompilationError" in r.error.message
    assert "float(n_cols)" in r.error.message  # the compiler's own message, with the line
    twin = good(run(make_ws, ladder_for, "softmax", K / "compile_helper_good.py", seed=12, **FAST))
    summary = twin.rung("run").summary
    assert "distinct launches" in summary and "compiled for sm_90a" in summary
    assert "beyond the dry call: other sizes or layouts" in summary
    kernels = {seen["kernel"] for seen in twin.rung("run").figures["launches"]}
    assert kernels == {"softmax_kernel", "narrow_kernel"}
    narrow = [s for s in twin.rung("run").figures["launches"] if s["kernel"] == "narrow_kernel"]
    assert all(s["beyond_dry_call"] for s in narrow)
    assert {lbl for s in narrow for lbl in s["specs"]} == {
        "(1, 1, fp32)",
        "(1, 1, bf16)",
        "(33, 64, fp32)",
        "(33, 64, bf16)",
    }


def test_the_example_records_every_launch_with_its_specialization(make_ws, ladder_for):
    res = good(run(make_ws, ladder_for, "softmax", ROOT / "kernels/softmax/v1.py", seed=13, **FAST))
    fig = res.rung("run").figures
    assert fig["launches_compiled"] == len(fig["launches"]) >= 4
    assert sum(s["calls"] for s in fig["launches"]) >= fig["calls"]  # a launch per call, some cases call again
    sigs = [s["signature"] for s in fig["launches"]]
    # (1, 1): n_cols and every stride equal to 1 are constexprs; (33, 64): 64 is divisible by 16
    assert any(s["n_cols"] == "constexpr" for s in sigs)
    assert any(s["n_cols"] == "i32:16" and s["x_ptr"] == "*fp32:16" for s in sigs)
    assert any(s["x_ptr"] == "*bf16:16" for s in sigs)
    dry = [s for s in fig["launches"] if not s["beyond_dry_call"]]
    assert [s["specs"][0] for s in dry] == ["(1, 129, fp32)"]  # the same specialization as (2, 4099, fp32)


# -- the folds, on their own -----------------------------------------------------------------------------------------
def leaf(shape):
    return {"path": "", "kind": "tensor", "dtype": "float32", "shape": shape}


def test_specs_without_launch_counts_outputs_with_elements_and_ignores_refused_layouts():
    cases = [
        {"spec_index": 0, "seed": 1, "launches": {"k1": 1}, "outputs": [leaf([4])]},
        {"spec_index": 0, "seed": 2, "launches": {}, "outputs": [leaf([4])]},  # one case launching is enough
        {"spec_index": 1, "seed": 1, "launches": {}, "outputs": [leaf([0, 3])]},  # nothing to compute
        {"spec_index": 2, "seed": 1, "launches": {}, "outputs": [leaf([5])]},
        {"spec_index": 3, "seed": 1, "launches": {}, "unsupported": "ValueError: no", "outputs": []},
        {"spec_index": 4, "seed": 1, "launches": {}, "outputs": [{"path": "", "kind": "number", "value": 3}]},
        # fuzz's empty draw (1, 0): a row sum of no columns is zeros, answered on the host (red team round 29)
        {"spec_index": 5, "seed": 1, "launches": {}, "spec": {"rows": 1, "cols": 0}, "outputs": [leaf([1])]},
    ]
    assert specs_without_launch(cases) == [2, 4]
    assert specs_without_launch([{k: v for k, v in c.items() if k != "launches"} for c in cases]) == []


def test_seen_launches_name_the_specs_and_what_the_dry_call_made():
    table = {
        k: {
            "key": k,
            "language": "triton",
            "kernel": "k",
            "qualname": "m:k",
            "signature": {"x": "*fp32:16"},
            "constexprs": {},
            "options": {},
            "args": {},
        }
        for k in ("a", "b")
    }
    problem = {"tests": [{"n": 1}, {"n": 4099}, {"n": 9000}], "labels": ["(1,)", "(4099,)", "fuzzed(9000,)"]}
    problem["fuzzed"] = [2]
    res = {
        "cases": [
            {"spec_index": 1, "seed": 1, "launches": {"a": 2}},
            {"spec_index": 1, "seed": 1, "layout": "offset", "launches": {"b": 1}},
            {"spec_index": 0, "seed": 1, "launches": {"a": 1}},
            {"spec_index": 2, "seed": 1, "launches": {"b": 1}},
        ],
        "tampered": [],
        "threads_left": 0,
        "launch_table": table,
    }
    seen = seen_launches(res, problem)
    assert [(s["key"], s["specs"], s["calls"], s["beyond_dry_call"]) for s in seen] == [
        ("a", ["(4099,)", "(1,)"], 3, False),
        ("b", ["(4099,)", "fuzzed(9000,)"], 2, True),  # the largest module spec is the dry call's, contiguous
    ]


# -- the recorder's specialization, rebuilt ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    ["aligned", "misaligned", 1, 16, 17, -3, 2**33, 2**33 + 1, 2**63 + 5, 1.5, True, None],
)
def test_a_rebuilt_argument_specializes_as_the_observed_one(value):
    torch = pytest.importorskip("torch")
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    from ktui.worker.capture import _describe_arg, rebuild

    if value in ("aligned", "misaligned"):
        t = torch.empty(64, dtype=torch.bfloat16)
        value = t if value == "aligned" else t[1:]
    got = rebuild(_describe_arg(value))

    def spec(v):
        return native_specialize_impl(BaseBackend, v, False, True, True)

    assert spec(got) == spec(value)


def test_the_replay_takes_each_kernel_constexpr_and_option_combination_first():
    from ktui.core.ladder.rungs.run import replay_order

    def rec(key, block, sig):
        return {
            "key": key,
            "language": "triton",
            "kernel": "k",
            "qualname": "m:k",
            "signature": {"x": sig, "BLOCK": "constexpr"},
            "constexprs": {"BLOCK": block},
            "options": {"num_warps": 4},
            "args": {},
        }

    launches = [rec("a", 128, "*fp32:16"), rec("b", 128, "*fp32"), rec("c", 256, "*fp32:16"), rec("d", 256, "*bf16")]
    assert [r["key"] for r in replay_order(launches)] == ["a", "c", "b", "d"]


def test_a_host_side_special_case_is_a_warning_not_times_torch(make_ws, ladder_for):
    """An honest softmax answers one-column rows with torch.ones_like (no kernel) and launches one elsewhere: the
    scan finds no torch compute, so the specs without a launch are reported, not failed (a false alarm before)."""
    res = run(make_ws, ladder_for, "softmax", K / "host_special_case_good.py", seed=5, **FAST)
    c = corr(good(res))
    assert any(w.startswith("no kernel launched: the calls of spec=(1, 1, fp32)") for w in c.warnings), c.warnings


def test_a_version_the_first_verdict_failed_is_not_kept_waiting_on_its_launch_compiles():
    """New-user trial 23, F5: the sm_90a compiles of every distinct launch ran after the first verdict had failed
    the version, 20 s before its verdict. A first verdict in and FAILED skips them (the summary says so); one not
    in yet, or OK, compiles them."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from ktui.core.events import FirstVerdict
    from ktui.core.ladder.rungs.run import compile_seen, first_verdict_failed
    from ktui.core.results import RungResult

    launch = {"kernel": "k", "qualname": "m.k", "signature": {}, "constexprs": {}, "options": {}, "language": "triton"}
    seen = [{"key": "a", "specs": ["(8,)"], "kernel": "k", "calls": 1, "beyond_dry_call": False}]

    def verdict(status: Status | None) -> Future:
        fut: Future = Future()
        if status is not None:
            fut.set_result(
                FirstVerdict(key="p/v1", run_id=1, result=RungResult("correctness", status), cases=3, seconds=1.0)
            )
        return fut

    class Compiler:
        calls = 0

        def compile(self, request, timeout_s, on_progress):
            Compiler.calls += 1
            return {"launches": [launch], "compile_s": 0.1}

    def ctx(status: Status | None) -> SimpleNamespace:
        return SimpleNamespace(
            first_verdict=verdict(status),
            compiler=Compiler(),
            sources=lambda: {},
            seed=1,
            pool=SimpleNamespace(device="cuda"),
            options=SimpleNamespace(timeouts={"compile": 60}),
            progress=lambda *a, **k: None,
        )

    failed = ctx(Status.FAILED)
    assert first_verdict_failed(failed)
    rr = RungResult("run", Status.OK, summary="3 cases ok")
    compile_seen(failed, {"launch_table": {"a": launch}}, seen, rr)
    assert Compiler.calls == 0
    assert rr.summary == "3 cases ok; 1 distinct launch, not compiled again: the first verdict failed"
    assert rr.figures["launches_compiled"] == 0
    for status in (Status.OK, None):  # right so far, or not in yet: compiled
        c = ctx(status)
        assert not first_verdict_failed(c)
        rr = RungResult("run", Status.OK, summary="3 cases ok")
        compile_seen(c, {"launch_table": {"a": launch}}, seen, rr)
        assert rr.summary == "3 cases ok; 1 distinct launch, 1 compiled for the GPU"
    assert Compiler.calls == 2


def test_a_launch_compile_past_its_limit_is_said_to_be_slow_not_broken():
    """New-user trial 32, F2: a 131,072-wide block's sm_90a compile cut at its limit on a loaded machine read "one
    does not compile" in the run rung's summary (and in ``ktui eval``'s). A compile that timed out says so, with the
    flag that lifts the limit; one that raised still "does not compile"."""
    from types import SimpleNamespace

    from ktui.core.ladder.context import RungFailed
    from ktui.core.ladder.rungs.run import compile_seen
    from ktui.core.results import ErrorInfo, RungResult
    from ktui.core.workers.client import RemoteError, WorkerTimeout

    launch = {"kernel": "k", "qualname": "m.k", "signature": {}, "constexprs": {}, "options": {}, "language": "triton"}
    seen = [{"key": "a", "specs": ["(8,)"], "kernel": "k", "calls": 1, "beyond_dry_call": False}]
    for exc, said in (
        (
            WorkerTimeout("timed out after 120 s while running the launch k (compile)"),
            "one did not finish compiling within",
        ),
        (RemoteError("CompilationError: bad", ErrorInfo("CompilationError", "bad")), "one does not compile"),
    ):

        class Compiler:
            def compile(self, request, timeout_s, on_progress, exc=exc):
                raise exc

        c = SimpleNamespace(
            first_verdict=None,
            compiler=Compiler(),
            sources=lambda: {},
            seed=1,
            pool=SimpleNamespace(device="cpu"),
            options=SimpleNamespace(timeouts={"compile": 60}),
            progress=lambda *a, **k: None,
            user_paths=lambda info: info,
        )
        rr = RungResult("run", Status.OK, summary="3 cases ok")
        with pytest.raises(RungFailed) as got:
            compile_seen(c, {"launch_table": {"a": launch}}, seen, rr)
        assert said in got.value.summary, got.value.summary
        if isinstance(exc, WorkerTimeout):
            assert "--timeout compile=S" in got.value.summary and "does not compile" not in got.value.summary
