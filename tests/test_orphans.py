"""A process that a kernel leaves behind (a double fork and ``setsid`` escape the kill of the worker's process group)
is reaped after the ladder: ktui is its subreaper and ``WorkerPool.recycle`` kills what runs ktui's worker program
but is no live worker (``ktui.core.workers.orphans``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from ktui.core.events import RungFinished
from ktui.core.workers import orphans

REFERENCE = """
import torch

def generate_input(seed, n):
    return torch.randn(n), torch.randn(n)

def ref_kernel(data):
    a, b = data
    return a + b

tests = [{"n": n} for n in (1, 17)]
contiguous_only = True
"""

# Once per import (the compile worker's dry call, the candidate's two phases), the kernel leaves a sleeper behind:
# the child starts a new session and forks again, then exits; the grandchild (still ``python -m ktui.worker`` on its
# command line) writes its pid into PIDS and sleeps for ten minutes.
KERNEL = """
import os
import time

PIDS = {pids!r}
_LEFT = False


def _leave_a_sleeper():
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, 4096)
                tmp = os.path.join(PIDS, f".{{os.getpid()}}")
                with open(tmp, "w") as f:
                    f.write(str(os.getpid()))
                os.rename(tmp, os.path.join(PIDS, str(os.getpid())))
                time.sleep(600)
        finally:
            os._exit(0)
    os.waitpid(child, 0)


def custom_kernel(data):
    global _LEFT
    if not _LEFT:
        _LEFT = True
        _leave_a_sleeper()
    a, b = data
    return a + b
"""


def _alive(pid: int) -> bool:
    """Still a process (a zombie counts: it was killed but nobody reaped it)."""
    return Path(f"/proc/{pid}").exists()


def _sleepers(pids: Path) -> list[int]:
    return sorted(int(p.name) for p in pids.iterdir() if not p.name.startswith("."))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper is Linux's prctl")
def test_a_process_a_kernel_double_forks_is_reaped_after_the_ladder(make_ws, ladder_for, cpu_pool, tmp_path):
    assert orphans.become_subreaper()
    pids = tmp_path / "pids"
    pids.mkdir()
    ws = make_ws([], {"orphan/v1": KERNEL.format(pids=str(pids))})
    (ws.root / "references" / "orphan.py").write_text(REFERENCE)
    lad = ladder_for(ws, seeds=1, rungs=("compile", "run"))
    during: dict[str, object] = {}

    def before_the_recycle(ev) -> None:  # on the ladder's thread, after the last rung, before recycle()
        if isinstance(ev, RungFinished) and ev.result.name == "run":
            deadline = time.monotonic() + 10
            while len(_sleepers(pids)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            left = _sleepers(pids)
            during["left"] = left
            during["alive"] = [p for p in left if _alive(p)]
            during["adopted"] = [p for p in left if p in orphans.adopted_workers()]

    unsubscribe = cpu_pool.bus.subscribe(before_the_recycle)
    try:
        res = lad.run(ws.kernel(ws.root / "kernels" / "orphan" / "v1.py"))
    finally:
        unsubscribe()
    assert res.ok, [r.line() for r in res.rungs]
    left = during["left"]
    # the compiler's dry call and at least one candidate import each left a sleeper, alive before the recycle, and
    # re-parented to ktui with ktui's worker program on its command line (what the reaper matches)
    assert len(left) >= 2, left
    assert during["alive"] == left and during["adopted"] == left
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in left if _alive(p)], "the sleepers outlived the ladder"


def test_a_worker_told_to_stop_exits_by_itself_with_code_0(tmp_path):
    """Quitting ktui waited 3.3 s for three idle CPU workers (2026-12-06): the interpreter's finalization with torch
    and triton loaded outlasted ``stop``'s grace, so each was killed after it. A worker told to stop ends at once
    (``ktui.worker.__main__._end``): its exit code is its own 0, not the kill's -9."""
    from ktui.core.ladder import WorkerPool
    from ktui.core.workspace import Workspace

    (tmp_path / "references").mkdir()
    (tmp_path / "kernels").mkdir()
    pool = WorkerPool(Workspace(tmp_path), "cpu")
    pool.start()
    try:
        pool.device_info()
        ready = [w for w in pool.workers if w.hello is not None]
        procs = {w.role: w._proc for w in ready}
        assert set(procs) >= {"candidate", "judge"}
    finally:
        pool.stop()
    assert {role: p.returncode for role, p in procs.items() if p is not None} == dict.fromkeys(procs, 0)
