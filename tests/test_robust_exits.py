"""A kernel that prints megabytes on every call, calls ``sys.exit`` in ``custom_kernel``, ends its worker with
``os._exit(3)``, or replaces ``threading.excepthook`` and exits from the thread ktui calls it on: each is reported
(the rung, the case, the exit code or the hook) and ktui stays up, its next ladder passing an honest version (issue
10). ``os._exit`` from another thread and ``os.chdir`` are in tests/test_crash_messages.py, a 20 MB print once per
import in tests/test_robustness.py."""

from __future__ import annotations

import resource

from ktui.core.results import Status
from ktui.core.workers.logs import LOG_CAP_BYTES

from .conftest import ROOT
from .test_robustness import QUICK, K, _line_of, ladder, lines

HONEST = ROOT / "kernels/vector_add/v1.py"
ROOMY = {**QUICK, "run": 300.0, "correctness": 300.0}  # a loaded 2-core machine: no limit is what ends these calls
FEW = dict(seeds=1, distributions=False, layouts=False, fuzz=False, near_duplicates=False, timeouts=ROOMY)


def _next_ladder_passes(make_ws, ladder_for, cpu_pool) -> None:
    assert cpu_pool.candidate.alive()
    again, _, _ = ladder(make_ws, ladder_for, "vector_add", HONEST, rungs=("compile", "run", "correctness"), **FEW)
    assert again.ok, lines(again)


# -- robust-exit: sys.exit in custom_kernel ------------------------------------------------------------------------
def test_sys_exit_in_custom_kernel_fails_run_naming_the_exit_and_the_case(make_ws, ladder_for, cpu_pool):
    res, _, _ = ladder(make_ws, ladder_for, "vector_add", K / "robust_sys_exit_bad.py", rungs=("compile", "run"), **FEW)
    run = res.rung("run")
    assert run is not None and run.status is Status.FAILED, lines(res)
    assert run.error.type == "SystemExit", run.error
    first = run.line()
    assert "spec=(129,) seed=" in first and "the kernel called sys.exit(3)" in first, first
    line = _line_of(K / "robust_sys_exit_bad.py", "sys.exit(3)")
    assert f'File "kernels/vector_add/v1.py", line {line}, in custom_kernel' in run.error.traceback, run.error
    _next_ladder_passes(make_ws, ladder_for, cpu_pool)


# -- robust-exit: os._exit(3) in custom_kernel ---------------------------------------------------------------------
def test_os_exit_3_in_custom_kernel_is_a_worker_exit_with_its_code(make_ws, ladder_for, cpu_pool):
    res, _, _ = ladder(make_ws, ladder_for, "vector_add", K / "robust_os_exit_bad.py", rungs=("compile", "run"), **FEW)
    run = res.rung("run")
    assert run is not None and run.status is Status.FAILED, lines(res)
    assert run.error.type == "WorkerCrashed", run.error
    first = run.line()
    assert "the candidate worker died (exit code 3) while running spec=(129,) seed=" in first, first
    assert "os._exit() (from any thread)" in first, first
    assert "robust_os_exit_bad: giving up on 129 elements" in run.error.message  # the worker's last lines
    assert "the candidate worker was restarted" in run.error.message
    _next_ladder_passes(make_ws, ladder_for, cpu_pool)


# -- robust-exit: threading.excepthook replaced, then an exit on the thread the kernel runs on -----------------------
def test_a_kernel_that_replaces_the_excepthook_and_exits_fails_run_naming_the_exit(make_ws, ladder_for, cpu_pool):
    """The kernel swallows every thread's exceptions through a hook of its own, then calls ``sys.exit(3)``. Its
    calls run on the worker's main thread (``ktui.worker.invoke.serve``), where an exception never goes through
    ``threading.excepthook``: the call ends at once with the exit (not after the run's 300 s limit), and the next
    ladder passes. In-process: ``test_redteam_round10_context.test_a_kernel_exception_and_sys_exit_come_back...``."""
    res, _, _ = ladder(
        make_ws, ladder_for, "vector_add", K / "robust_excepthook_bad.py", rungs=("compile", "run"), **FEW
    )
    run = res.rung("run")
    assert run is not None and run.status is Status.FAILED, lines(res)
    assert run.error.type == "SystemExit", run.error  # not WorkerTimeout after the run's 300 s
    first = run.line()
    assert "spec=(129,) seed=" in first and "the kernel called sys.exit(3)" in first, first
    _next_ladder_passes(make_ws, ladder_for, cpu_pool)


# -- robust-print-flood: 10 MB on every call -----------------------------------------------------------------------
def test_10_mb_of_output_per_call_is_capped_reported_and_does_not_hide_a_failure(make_ws, ladder_for, cpu_pool):
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux: ktui's own high-water mark
    rungs = ("compile", "run", "correctness")
    good, _, _ = ladder(make_ws, ladder_for, "vector_add", K / "robust_print_flood_good.py", rungs=rungs, **FEW)
    assert good.ok, lines(good)
    run = good.rung("run")
    printed = [w for w in run.warnings if w.startswith("the kernel printed")]
    assert len(printed) == 1, run.warnings
    mb = int(printed[0].split()[3])
    assert mb >= 10 * run.figures["calls"], (mb, run.figures["calls"])  # 10 MiB (10.5 MB) a call, every call
    assert f"keeps the last {LOG_CAP_BYTES >> 20} MB" in printed[0]
    log_dir = cpu_pool.candidate.log_dir
    for name in ("candidate.log", "candidate.log.1"):
        assert (log_dir / name).stat().st_size <= LOG_CAP_BYTES, name
    kept = (log_dir / "candidate.log.1").read_bytes() + (log_dir / "candidate.log").read_bytes()
    assert b"robust_print_flood: end of this call's output" in kept  # the tail is kept
    # hundreds of MB went through ktui's pipes: none of it stayed in ktui's memory
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert grown_mib < 256, grown_mib

    bad, _, _ = ladder(make_ws, ladder_for, "vector_add", K / "robust_print_flood_bad.py", rungs=rungs, **FEW)
    corr = bad.rung("correctness")
    assert corr is not None and corr.status is Status.FAILED, lines(bad)
    assert "unwritten" in corr.summary, corr.summary
    failing = {s["label"] for s in corr.figures["specs"] if not s["ok"]}
    assert failing == {s["label"] for s in corr.figures["specs"]}  # every size drops its last element
    assert any(w.startswith("the kernel printed") for w in bad.rung("run").warnings)
    assert cpu_pool.candidate.alive()
