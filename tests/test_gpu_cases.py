"""The cases of shared/cases.md that need a GPU, each with its honest twin (skipped without one; run them with
`bash benchmarks/h200.sh cases`)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from ktui.core.ladder import Ladder, LadderOptions, WorkerPool
from ktui.core.results import Status
from ktui.core.workspace import Workspace

from .conftest import ROOT

pytestmark = pytest.mark.gpu
CASES = Path(__file__).resolve().parent / "cases"
K = CASES / "kernels"


@pytest.fixture(scope="module")
def gpu_pool(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-cases")
    (root / "references").mkdir()
    (root / "kernels").mkdir()
    pool = WorkerPool(Workspace(root), "cuda")
    pool.start()
    yield pool
    pool.stop()


def run(tmp_path, pool, problem: str, kernel: Path, reference: Path | None = None, version: str = "v1", **opts):
    root = tmp_path / f"ws-{problem}-{version}-{kernel.stem}"
    (root / "references").mkdir(parents=True)
    (root / "kernels" / problem).mkdir(parents=True)
    shutil.copy(reference or ROOT / "references" / f"{problem}.py", root / "references" / f"{problem}.py")
    shutil.copy(kernel, root / "kernels" / problem / f"{version}.py")
    ws = Workspace(root)
    return Ladder(ws, pool, options=LadderOptions(**opts)).run(ws.kernel(root / "kernels" / problem / f"{version}.py"))


def test_side_stream_work_is_flagged_by_the_host_synchronized_timer(tmp_path, gpu_pool):
    ref = CASES / "references" / "matmul_fp32.py"
    bad = run(tmp_path, gpu_pool, "matmul_fp32", K / "side_stream_bad.py", ref)
    assert bad.rung("correctness").status is Status.OK  # the result is checked after a full device sync
    bench = bad.rung("benchmark")
    assert bench.status is Status.FAILED and "timing escapes the events" in bench.error.message
    assert any("another stream" in w for w in bad.rung("compile").warnings)  # the static scan saw it too
    twin = run(tmp_path, gpu_pool, "matmul_fp32", K / "side_stream_good.py", ref)
    assert twin.rung("benchmark").status is Status.OK, twin.rung("benchmark").line()


def test_half_the_work_on_a_side_stream_is_flagged(tmp_path, gpu_pool):
    ref = CASES / "references" / "matmul_fp32.py"
    bad = run(tmp_path, gpu_pool, "matmul_fp32", K / "side_stream_half_bad.py", ref)
    bench = bad.rung("benchmark")
    spec = bench.figures["specs"][0]
    print("side_stream_half_bad: events", spec["median_us"], "us, host loop", spec["host_us_per_call"], "us")
    assert bench.status is Status.FAILED and "timing escapes the events" in bench.error.message


def test_cached_output_fails_on_the_recheck_of_timed_calls(tmp_path, gpu_pool):
    ref = CASES / "references" / "matmul_fp32.py"
    bad = run(tmp_path, gpu_pool, "matmul_fp32", K / "cached_output_bad.py", ref)
    failed = bad.failed_rung
    assert failed is not None and failed.name in ("correctness", "benchmark"), [r.line() for r in bad.rungs]
    if failed.name == "benchmark":
        assert "output of the last timed call is wrong" in failed.error.message


def test_real_tf32_is_flagged_against_the_expected_errors(tmp_path, gpu_pool):
    ref = CASES / "references" / "matmul_fp32.py"
    os.environ["KTUI_REAL_TF32"] = "1"  # inherited by a restarted worker; the module reads it at import
    gpu_pool.candidate.restart("KTUI_REAL_TF32 for this test")
    try:
        bad = run(tmp_path, gpu_pool, "matmul_fp32", K / "matmul_fp32_tf32_bad.py", ref)
    finally:
        del os.environ["KTUI_REAL_TF32"]
        gpu_pool.candidate.restart("back to normal")
    c = bad.rung("correctness")
    assert c.status is Status.FAILED
    assert any("precision lower than declared float32" in w for w in c.warnings)
    twin = run(tmp_path, gpu_pool, "matmul_fp32", K / "matmul_fp32_good.py", ref)
    assert twin.rung("correctness").status is Status.OK


def test_float_atomics_are_caught_as_run_to_run_spread(tmp_path, gpu_pool):
    ref = CASES / "references" / "scatter_add.py"
    res = run(tmp_path, gpu_pool, "scatter_add", K / "scatter_add_atomic.py", ref, seeds=3)
    c = res.rung("correctness")
    texts = c.warnings + [c.summary]
    assert any("nondeterministic" in t for t in texts), texts  # a spread, within tolerance or not, is reported


def test_int32_overflow_fails_naming_the_shape_and_int64_passes(tmp_path, gpu_pool):
    ref = CASES / "references" / "big_copy.py"
    opts = dict(
        seeds=1, repeat=False, timeouts={"compile": 300.0, "run": 300.0, "correctness": 600.0, "benchmark": 60.0}
    )
    bad = run(tmp_path, gpu_pool, "big_copy", K / "big_copy_i32.py", ref, **opts)
    failed = bad.failed_rung
    assert failed is not None and failed.name in ("run", "correctness"), [r.line() for r in bad.rungs]
    assert "2147487744" in failed.line()  # the spec that broke it: 2**31 + 4096
    twin = run(tmp_path, gpu_pool, "big_copy", K / "big_copy_i64.py", ref, **opts)
    assert twin.rung("correctness").status is Status.OK, twin.rung("correctness").line()


def test_a_side_stream_behind_a_last_call_memo_is_flagged_by_the_fresh_input_host_loop(tmp_path, gpu_pool):
    ref = CASES / "references" / "matmul_fp32.py"
    bad = run(tmp_path, gpu_pool, "matmul_fp32", K / "side_stream_memo_bad.py", ref)
    bench = bad.rung("benchmark")
    spec = bench.figures["specs"][0]
    print("side_stream_memo_bad: events", spec["median_us"], "us, host loop", spec["host_us_per_call"], "us")
    assert bench.status is Status.FAILED and "timing escapes the events" in bench.error.message


def test_honest_examples_stay_under_100_percent_of_the_datasheet_peak(tmp_path, gpu_pool):
    for problem, version in (("vector_add", "v1"), ("matmul", "v2")):
        res = run(tmp_path, gpu_pool, problem, ROOT / "kernels" / problem / f"{version}.py", version=version)
        bench = res.rung("benchmark")
        assert bench.status is Status.OK, bench.line()
        for spec in bench.figures["specs"]:
            print(
                problem, version, spec["label"], spec.get("sol_pct"), spec.get("measured_pct"), spec.get("peak_source")
            )
            assert spec["sol_pct"] <= 100.0
            if "H200" in (bench.figures.get("device_name") or ""):
                assert spec["peak_source"] == "NVIDIA H200 datasheet (SXM)"
        host = bench.figures["host_recheck"]
        assert host and all(r["ok"] for r in host), host  # the last host-loop output was checked, and is right


def test_a_store_past_the_end_is_caught_by_the_canary_after_the_output(tmp_path, gpu_pool):
    bad = run(tmp_path, gpu_pool, "vector_add", K / "oob_store_le_bad.py")
    r = bad.rung("run")
    assert r.status is Status.FAILED, [x.line() for x in bad.rungs]
    assert re.search(
        r"out-of-bounds write: wrote 1 element past the end of out \(element (\d+) of \1, float32\)", r.line()
    )
    nomask = run(tmp_path, gpu_pool, "vector_add", K / "oob_store_nomask_bad.py")
    assert re.search(
        r"wrote \d+ elements past the end of out \(elements (\d+)\.\.\d+ of \1, float32\)", nomask.rung("run").line()
    )
    twin = run(tmp_path, gpu_pool, "vector_add", K / "oob_store_lt_good.py")
    assert twin.ok, [x.line() for x in twin.rungs]
