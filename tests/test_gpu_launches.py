"""Launch recording, "times torch, not a kernel" and compile coverage on a GPU (skipped without one): real launches
go through ``JITFunction.run`` (not the interpreter), CuTeDSL through the compiled function, and the launches the
run made are compiled again for the device (found in Triton's cache: the run compiled them)."""

from __future__ import annotations

import pytest

from ktui.core.results import Status

from .conftest import ROOT
from .test_gpu_cases import K, gpu_pool, run  # noqa: F401 - gpu_pool is a fixture

pytestmark = pytest.mark.gpu
TIMES_TORCH = "times torch, not a kernel"


def test_the_example_records_its_launches_and_compiles_them_for_the_gpu(tmp_path, gpu_pool):  # noqa: F811
    res = run(tmp_path, gpu_pool, "softmax", ROOT / "kernels/softmax/v1.py", rungs=("compile", "run", "correctness"))
    assert res.ok, [r.line() for r in res.rungs]
    r = res.rung("run")
    assert "compiled for the GPU" in r.summary, r.summary
    assert r.figures["launches"] and all(s["kernel"] == "softmax_kernel" for s in r.figures["launches"])
    assert r.figures["launches_compiled"] == len(r.figures["launches"])


def test_a_cutedsl_version_counts_as_launching(tmp_path, gpu_pool):  # noqa: F811
    pytest.importorskip("cutlass")
    res = run(
        tmp_path, gpu_pool, "vector_add", ROOT / "kernels/vector_add/v3.py", rungs=("compile", "run", "correctness")
    )
    assert res.ok, [r.line() for r in res.rungs]
    launches = res.rung("run").figures["launches"]
    assert {s["kernel"] for s in launches} == {"add"}, launches


def test_torch_above_a_size_times_torch_on_the_gpu(tmp_path, gpu_pool):  # noqa: F811
    res = run(
        tmp_path, gpu_pool, "vector_add", K / "torch_operator_bad.py", rungs=("compile", "run", "correctness", "dumps")
    )
    corr = res.rung("correctness")
    assert corr.status is Status.FAILED and corr.summary.startswith(f"{TIMES_TORCH}: the calls of spec=(4099,)")
    assert res.rung("dumps").status is Status.FAILED and TIMES_TORCH in res.rung("dumps").summary
    twin = run(tmp_path, gpu_pool, "vector_add", K / "torch_operator_good.py", rungs=("compile", "run", "correctness"))
    assert twin.ok, [r.line() for r in twin.rungs]


def test_a_version_that_launches_nothing_times_torch_on_the_gpu(tmp_path, gpu_pool):  # noqa: F811
    res = run(tmp_path, gpu_pool, "softmax", K / "no_launch_bad.py", rungs=("compile", "run", "correctness"))
    corr = res.rung("correctness")
    assert corr.status is Status.FAILED and corr.summary.startswith(TIMES_TORCH), corr.summary


def test_torch_at_the_timed_size_unless_the_inputs_look_like_placeholders_times_torch(tmp_path, gpu_pool):  # noqa: F811
    """On a GPU the dumps rung calls the version on the reference's own inputs at the timed size (red team round 7:
    its placeholders were fresh zero pages a kernel could tell apart)."""
    res = run(tmp_path, gpu_pool, "vector_add", K / "placeholder_watch_bad.py", rungs=("compile", "dumps"))
    assert res.rung("dumps").status is Status.FAILED and TIMES_TORCH in res.rung("dumps").summary
