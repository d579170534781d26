"""A CuTeDSL version on a machine without a GPU: compiled for sm_90a and dumped, its run skipped as "needs a GPU"
(not failed: exit 0, ``◌ needs a GPU`` in ``ktui status`` and the TUI), the rungs that call it skipped with the same
reason; and a kernel that fakes that error, or hides it, gets no such pass."""

from __future__ import annotations

import pytest

from ktui.core import report
from ktui.core.figures import check as figures_check
from ktui.core.results import Status

from .conftest import ROOT
from .jsonout import data_of
from .test_cases import K, good, run
from .test_cli import ktui
from .test_gpu_cases import gpu_pool  # noqa: F401 - a fixture
from .test_gpu_cases import run as gpu_run

V3 = ROOT / "kernels/vector_add/v3.py"
REASON = "needs a GPU: CuTeDSL kernel add compiled for sm_90a, but running it needs a CUDA GPU"


def _no_gpu() -> None:
    pytest.importorskip("cutlass")
    from .conftest import cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is here: the CuTeDSL version runs (tests/test_gpu.py)")


def test_cutedsl_on_the_cpu_skips_run_as_needs_a_gpu_and_keeps_ptx_cubin_and_sass(make_ws, ladder_for):
    _no_gpu()
    ws = make_ws(["vector_add"], {"vector_add/v3": V3})
    res = ladder_for(ws).run(ws.kernel(ws.root / "kernels/vector_add/v3.py"))
    by = {r.name: r for r in res.rungs}
    assert list(by) == ["compile", "run", "correctness", "benchmark", "dumps"]
    assert by["compile"].status is Status.OK and by["compile"].figures["languages"] == ["cutedsl"]
    for name in ("run", "correctness", "benchmark"):
        assert by[name].status is Status.SKIPPED, by[name].line()
        assert by[name].summary.startswith(REASON), by[name].summary
        assert by[name].figures == {"reason": "needs a GPU"} and by[name].error is None
        assert figures_check(name, by[name].figures, skipped=True) == []
    assert by["run"].line().startswith(f"[run] skipped {REASON}")
    assert res.ok and res.failed_rung is None  # nothing failed: `ktui run` exits 0
    assert report.verdict(res) == ("◌ needs a GPU", "yellow")
    assert "not run here: needs a GPU" in report.for_model(res).splitlines()[0]
    # dumps still ran: the PTX and the cubin CuTeDSL compiled for sm_90a (the code, not the path it meant to write)
    # and the SASS disassembled from it
    dumps = by["dumps"]
    assert dumps.status is Status.OK, dumps.line()
    (kernel,) = dumps.figures["kernels"]
    assert kernel["language"] == "cutedsl" and set(kernel["files"]) >= {"ptx", "cubin", "sass"}
    assert ".target sm_90a" in (ws.root / kernel["files"]["ptx"]).read_text()
    assert (ws.root / kernel["files"]["cubin"]).read_bytes()[:4] == b"\x7fELF"
    assert kernel["resources"]["registers"] > 0 and kernel["mix"].get("STG.32", 0) >= 1
    assert dumps.summary.startswith("add: ") and dumps.summary.endswith("[sm_90a]")


def test_ktui_run_exits_0_and_ktui_status_says_needs_a_gpu(make_ws):
    _no_gpu()
    ws = make_ws(["vector_add"], {"vector_add/v3": V3})
    p = ktui("run", str(ws.root / "kernels/vector_add/v3.py"), "--json", "--device", "cpu")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    d = data_of(p.stdout, "run")
    rungs = {r["name"]: r for r in d["rungs"]}
    assert d["ok"] is True
    assert [rungs[n]["status"] for n in ("compile", "run", "correctness", "benchmark", "dumps")] == [
        "ok",
        "skipped",
        "skipped",
        "skipped",
        "ok",
    ]
    assert rungs["run"]["summary"].startswith(REASON) and rungs["run"]["reason"] == "needs a GPU"
    files = rungs["dumps"]["kernels"][0]["files"]
    ptx = (ws.root / files["ptx"]).read_text()
    assert ".target sm_90a" in ptx and ".entry" in ptx
    assert (ws.root / files["cubin"]).read_bytes()[:4] == b"\x7fELF"
    assert "STG" in (ws.root / files["sass"]).read_text()
    s = ktui("status", str(ws.root))
    assert s.returncode == 0, s.stderr
    line = next(ln for ln in s.stdout.splitlines() if ln.strip().startswith("v3"))
    assert "◌ needs a GPU" in line and "cpu (interpreter)" in line
    assert s.stdout.splitlines()[-1] == "1 version: 1 needs a GPU"
    st = data_of(ktui("status", str(ws.root), "--json").stdout, "status")
    (v,) = st["problems"][0]["versions"]
    assert v["ok"] is True and v["failed_rung"] is None and v["needs_gpu"].startswith(REASON)


# -- needs-gpu-forged: a kernel that raises the error itself does not get the skip -----------------------------------
def test_a_triton_kernel_raising_needs_gpu_itself_fails_run(make_ws, ladder_for):
    res = run(make_ws, ladder_for, "vector_add", K / "needs_gpu_forged_bad.py")
    r = res.rung("run")
    assert r.status is Status.FAILED, r.line()
    assert r.error.type == "NeedsGPU" and "needs a CUDA GPU" in r.error.message
    assert [x.name for x in res.rungs] == ["compile", "run"]  # a failed run still stops the ladder
    assert not res.ok and report.verdict(res) == ("✗ run", "bold red")
    good(run(make_ws, ladder_for, "vector_add", ROOT / "kernels/vector_add/v1.py"))


# -- needs-gpu-caught: a CuTeDSL kernel that catches the error and answers with torch is not passed ------------------
def test_a_cutedsl_kernel_catching_needs_gpu_is_skipped_not_passed(make_ws, ladder_for):
    _no_gpu()
    res = run(make_ws, ladder_for, "vector_add", K / "needs_gpu_caught_bad.py")
    r = res.rung("run")
    assert r.status is Status.SKIPPED, r.line()
    assert r.summary.startswith(REASON) and "custom_kernel caught that error and returned anyway" in r.summary
    assert res.rung("correctness").status is Status.SKIPPED  # torch's answer is never judged as the kernel's
    assert report.verdict(res) == ("◌ needs a GPU", "yellow")
    twin = run(make_ws, ladder_for, "vector_add", V3, version="v2").rung("run")
    assert twin.status is Status.SKIPPED and "caught" not in twin.summary


# -- on a GPU the CuTeDSL version runs as before, and its dumps are the code ---------------------------------------
@pytest.mark.gpu
def test_on_a_gpu_the_cutedsl_version_runs_every_rung_and_dumps_its_ptx_and_cubin(tmp_path, gpu_pool):  # noqa: F811
    pytest.importorskip("cutlass")
    res = gpu_run(tmp_path, gpu_pool, "vector_add", V3, rungs=("compile", "run", "correctness", "dumps"))
    assert res.ok and all(r.status is Status.OK for r in res.rungs), [r.line() for r in res.rungs]
    assert not res.rung("run").summary.startswith("needs a GPU") and report.verdict(res)[0] != "◌ needs a GPU"
    (kernel,) = res.rung("dumps").figures["kernels"]
    ws_root = tmp_path / "ws-vector_add-v1-v3"  # where test_gpu_cases.run puts it
    assert ".entry" in (ws_root / kernel["files"]["ptx"]).read_text()
    assert (ws_root / kernel["files"]["cubin"]).read_bytes()[:4] == b"\x7fELF"
    assert "sass" in kernel["files"]


def test_inline_ptx_under_the_interpreter_needs_a_gpu_not_a_failure(make_ws, ladder_for):
    """``tl.inline_asm_elementwise`` (the branch ``tl.target_info.is_cuda()`` takes, as on the GPU) cannot run under
    the interpreter: the version is skipped as needing a GPU (exit 0, not checked), not failed with the interpreter's
    NotImplementedError (review finding, stop 24), and its PTX still compiles for sm_90a in dumps."""
    from .conftest import cuda_available

    if cuda_available():
        pytest.skip("a CUDA GPU is here: the inline PTX runs")
    res = run(make_ws, ladder_for, "vector_add", K / "inline_ptx_add.py")
    by = {r.name: r for r in res.rungs}
    reason = "needs a GPU: the kernel's inline PTX (tl.inline_asm_elementwise: 'add.f32 $0, $1, $2;') runs only on"
    for name in ("run", "correctness", "benchmark"):
        assert by[name].status is Status.SKIPPED and by[name].summary.startswith(reason), by[name].line()
    assert res.ok and report.verdict(res) == ("◌ needs a GPU", "yellow")
    assert by["dumps"].status is Status.OK and "add_kernel" in by["dumps"].summary, by["dumps"].line()
