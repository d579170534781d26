"""On a CUDA GPU: every example passes every rung, and CUDA faults and GPU hangs fail their rung while the worker
comes back. Skipped without a GPU (run them with `bash benchmarks/h200.sh tests`)."""

from __future__ import annotations

import shutil

import pytest

from ktui.core.ladder import Ladder, LadderOptions, WorkerPool
from ktui.core.results import Status
from ktui.core.workspace import Workspace

from .conftest import BAD, ROOT

pytestmark = pytest.mark.gpu
EXAMPLES = ["vector_add/v1", "vector_add/v2", "vector_add/v3", "softmax/v1", "softmax/v2", "matmul/v1", "matmul/v2"]


@pytest.fixture(scope="module")
def gpu_ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu")
    shutil.copytree(ROOT / "references", root / "references")
    shutil.copytree(ROOT / "kernels", root / "kernels")
    for name, problem in (("illegal_address.py", "vector_add"), ("gpu_spin.py", "vector_add")):
        shutil.copy(BAD / name, root / "kernels" / problem / f"bad_{name}")
    return Workspace(root)


@pytest.fixture(scope="module")
def gpu_pool(gpu_ws):
    pool = WorkerPool(gpu_ws, "cuda")
    pool.start()
    yield pool
    pool.stop()


def _k(ws, key):
    problem, version = key.split("/")
    return ws.kernel(ws.root / "kernels" / problem / f"{version}.py")


@pytest.mark.parametrize("key", EXAMPLES)
def test_every_example_passes_every_rung_on_the_gpu(gpu_ws, gpu_pool, key):
    if key.endswith("v3"):
        pytest.importorskip("cutlass")
    res = Ladder(gpu_ws, gpu_pool).run(_k(gpu_ws, key))
    assert [r.name for r in res.rungs] == ["compile", "run", "correctness", "benchmark", "dumps"]
    assert all(r.status is Status.OK for r in res.rungs), [r.line() for r in res.rungs]
    assert res.device["type"] == "cuda" and res.device["interpreter"] is False
    bench = res.rung("benchmark").figures["specs"]
    assert all(s["median_us"] > 0 and s["speedup"] > 0 for s in bench)


def test_illegal_address_fails_run_and_the_worker_restarts(gpu_ws, gpu_pool):
    cand = gpu_pool.candidate
    starts = cand.starts
    lad = Ladder(gpu_ws, gpu_pool)
    res = lad.run(_k(gpu_ws, "vector_add/bad_illegal_address"))
    run = res.rung("run")
    assert run is not None and run.status is Status.FAILED, [r.line() for r in res.rungs]
    assert "illegal memory access" in run.error.message.lower() or "illegal address" in run.error.message.lower()
    assert cand.starts == starts + 1 and gpu_pool.candidate is not cand
    assert lad.run(_k(gpu_ws, "vector_add/v1")).ok


def test_gpu_hang_times_out_and_the_worker_restarts(gpu_ws, gpu_pool):
    cand = gpu_pool.candidate
    starts = cand.starts
    lad = Ladder(
        gpu_ws,
        gpu_pool,
        options=LadderOptions(timeouts={"compile": 60.0, "run": 8.0, "correctness": 60.0, "benchmark": 60.0}),
    )
    res = lad.run(_k(gpu_ws, "vector_add/bad_gpu_spin"))
    run = res.rung("run")
    assert run is not None and run.status is Status.FAILED, [r.line() for r in res.rungs]
    assert "timed out after 8 s" in run.error.message
    assert cand.starts == starts + 1 and gpu_pool.candidate is not cand
    assert Ladder(gpu_ws, gpu_pool).run(_k(gpu_ws, "vector_add/v2")).ok


@pytest.mark.parametrize("key", ["vector_add/v2", "softmax/v2", "matmul/v2"])
def test_profile_rung_reads_nsight_compute_figures(gpu_ws, gpu_pool, key):
    from ktui.core.store import ResultStore

    lad = Ladder(gpu_ws, gpu_pool, store=ResultStore(gpu_ws))
    res = lad.run(_k(gpu_ws, key), ("profile",))
    prof = res.rung("profile")
    assert prof.status is Status.OK, prof.line()
    k = prof.figures["kernels"][0]
    assert k["duration_us"] > 0 and k["registers"] > 0 and k["grid_size"] > 0
    assert 0 < k["memory_throughput_pct"] <= 100 and 0 < k["achieved_occupancy_pct"] <= 100
    assert (gpu_ws.root / prof.figures["report"]).exists()  # the .ncu-rep for the Nsight Compute GUI
    if key == "matmul/v2":
        assert prof.figures["pct_peak_flops"] > 30
    else:
        assert prof.figures["pct_peak_bandwidth"] > 30
