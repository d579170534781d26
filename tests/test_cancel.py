"""Cancelling a ladder: a newer save of the running file, the cancel key (``Session.cancel``) and the scheduler's
bookkeeping. A cancelled run is a notice, never a verdict on the kernel: nothing is stored, the version keeps its
last result, and the workers that ran it are restarted (``WorkerPool.cancel_run``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

from ktui.core.events import EventBus, LadderFinished, Notice, RungStarted
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.core.scheduler import CANCELLED, Scheduler, is_cancelled
from ktui.core.store import sha256
from ktui.core.workspace import KernelRef

from .conftest import BAD, ROOT


# -- the scheduler alone (no workers) -------------------------------------------------------------------------
class FakeLadder:
    """A ladder whose first run blocks until cancelled (as a hanging kernel does until its worker is killed); it
    returns a result with a ``RunCancelled`` compile then, else an ok one."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.ran: list[str] = []  # the content of each run
        self.reasons: list[str] = []

    def run(self, k: KernelRef) -> LadderResult:
        text = k.path.read_text()
        self.ran.append(text)
        res = LadderResult(k.problem, k.version, f"kernels/{k.problem}/{k.version}.py", {"type": "cpu"})
        res.source_sha256 = sha256(text.encode())
        if len(self.ran) == 1:
            self.started.set()
            assert self.cancelled.wait(10), "the run was never cancelled"
            res.rungs.append(RungResult("compile", Status.FAILED, error=ErrorInfo(CANCELLED, self.reasons[-1])))
        else:
            res.rungs.append(RungResult("compile", Status.OK))
        return res

    def on_cancel(self, reason: str) -> list[str]:
        self.reasons.append(reason)
        self.cancelled.set()
        return ["compiler"]


def _scheduler(ladder: FakeLadder, bus: EventBus, ended: list[bool]) -> Scheduler:
    return Scheduler(ladder.run, bus, on_cancel=ladder.on_cancel, after_cancel=lambda: ended.append(True))


def test_a_newer_save_of_the_running_file_cancels_it_and_serves_its_ticket(make_ws):
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    bus, ended, notices = EventBus(), [], []
    bus.subscribe(lambda ev: notices.append(ev.message) if isinstance(ev, Notice) else None)
    ladder = FakeLadder()
    s = _scheduler(ladder, bus, ended)
    s.start()
    try:
        k.path.write_text("# old content\n")
        first = s.submit(k, why="save")
        assert ladder.started.wait(5)
        s.submit(k, why="save")  # the same content again (an editor's second write): no cancel
        time.sleep(0.2)
        assert not ladder.cancelled.is_set()
        k.path.write_text("# new content\n")
        newer = s.submit(k, why="save")
        assert ladder.cancelled.wait(5)
        got = first.result(10)
        assert newer.result(10) is got  # the old content's submitters get the run of the new content
        assert s.wait_idle(10)
    finally:
        s.stop()
    assert ladder.reasons == ["cancelled: a newer save of v1.py"]
    assert first.cancelled_because == "cancelled: a newer save of v1.py"
    assert got.ok and got.source_sha256 == sha256(b"# new content\n")
    assert ladder.ran == ["# old content\n", "# new content\n"]  # the same-content save was skipped
    assert ended == [True]  # the pool was told the cancelled run ended, once
    assert s.last(k.key) is got  # the cancelled run is not the version's last result
    assert notices == [
        "vector_add/v1: run cancelled: a newer save of v1.py (no verdict: not a failure of the kernel); "
        "the compiler worker restarted"
    ]


def test_a_save_of_the_reference_while_a_version_runs_names_the_reference(make_ws):
    """New-user trial 24, F6: saving the reference while v2 ran read "cancelled: a newer save of v2.py"."""
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    bus, ended = EventBus(), []
    ladder = FakeLadder()
    s = _scheduler(ladder, bus, ended)
    s.start()
    try:
        k.path.write_text("# old content\n")
        first = s.submit(k, why="save")
        assert ladder.started.wait(5)
        ref = k.root / "references" / "vector_add.py"
        ref.write_text(ref.read_text() + "\n# edited\n")
        s.submit(k, why="save")
        assert ladder.cancelled.wait(5)
        first.result(10)
        assert s.wait_idle(10)
    finally:
        s.stop()
    assert ladder.reasons == ["cancelled: a newer save of references/vector_add.py"]


def test_cancel_ends_the_running_version_only_and_cancels_its_ticket(make_ws):
    ws = make_ws(["vector_add"])
    a, b = ws.versions("vector_add")[:2]
    bus, ended = EventBus(), []
    ladder = FakeLadder()
    s = _scheduler(ladder, bus, ended)
    s.start()
    try:
        ta = s.submit(a)
        assert ladder.started.wait(5)
        tb = s.submit(b)
        assert s.cancel(key=b.key) is None  # b waits: nothing of it runs
        assert s.cancel(reason="cancelled with the x key") == a.key
        with pytest.raises(CancelledError):
            ta.result(10)
        assert tb.result(10).ok  # what waited still runs
        assert s.cancel() is None  # nothing runs now
    finally:
        s.stop()
    assert ta.cancelled_because == "cancelled with the x key"
    assert s.last(a.key) is None


def test_is_cancelled_reads_the_rung_error_type():
    res = LadderResult("p", "v1", "kernels/p/v1.py", {"type": "cpu"})
    assert not is_cancelled(res)
    res.rungs.append(RungResult("compile", Status.FAILED, error=ErrorInfo("WorkerTimeout", "timed out after 30 s")))
    assert not is_cancelled(res)
    res.rungs.append(RungResult("run", Status.FAILED, error=ErrorInfo(CANCELLED, "cancelled")))
    assert is_cancelled(res)


# -- real workers ---------------------------------------------------------------------------------------------
def _hang_until_busy(session, k: KernelRef, timeout: float = 90.0):
    """Submit ``k`` (a hanging kernel) and wait until the compiler worker has been in its dry call for a second."""
    started = threading.Event()
    session.bus.subscribe(lambda ev: started.set() if isinstance(ev, RungStarted) and ev.rung == "compile" else None)
    ticket = session.submit(k)
    assert started.wait(timeout)
    deadline = time.monotonic() + timeout
    while not session.pool.compiler.busy:
        assert time.monotonic() < deadline, "the dry call never started"
        time.sleep(0.05)
    time.sleep(1.0)
    assert session.pool.compiler.busy and session.scheduler.running == k.key
    return ticket


def test_a_fixed_save_cancels_the_hang_at_once_and_runs(make_ws, session_for, cpu_pool):
    """The issue's case: ``while True`` in ``custom_kernel`` hangs the compile rung; the user saves a fix. The hang
    is cancelled within seconds (not after the compile limit), reported as cancelled (not a failure of the kernel),
    the compiler worker that spun is restarted, and the fixed content runs and is stored."""
    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "hangs.py"})
    session = session_for(ws, seeds=1, rungs=("compile",))  # (the fixed run climbs compile only: the CPU is shared)
    k = ws.versions("vector_add")[0]
    notices: list[tuple[float, str]] = []
    finished: list[LadderResult] = []
    session.bus.subscribe(lambda ev: notices.append((time.monotonic(), ev.message)) if isinstance(ev, Notice) else None)
    session.bus.subscribe(lambda ev: finished.append(ev.result) if isinstance(ev, LadderFinished) else None)
    first = _hang_until_busy(session, k)
    spun = session.pool.compiler
    starts = spun.starts
    assert session.limits["compile"] >= 200  # a first run here: the hang would last minutes
    fixed = (ROOT / "kernels/vector_add/v1.py").read_text()
    k.path.write_text(fixed)
    t0 = time.monotonic()
    session._on_file(k.path, False)  # what the watcher does on a save
    result = first.result(120)
    cancel_notes = [(t, m) for t, m in notices if "run cancelled" in m]
    assert len(cancel_notes) == 1 and cancel_notes[0][0] - t0 < 5.0, notices
    assert "vector_add/v1: run cancelled: a newer save of v1.py (no verdict" in cancel_notes[0][1]
    assert "compiler" in cancel_notes[0][1]
    assert spun.starts == starts + 1  # the worker that ran the hang was restarted (then replaced by a spare)
    assert is_cancelled(finished[0]) and finished[0].source_sha256 == sha256((BAD / "hangs.py").read_bytes())
    compile_rung = finished[0].rung("compile")
    assert compile_rung.error.type == "RunCancelled"
    assert "newer save of v1.py: the compiler worker was stopped during" in compile_rung.error.message
    assert result.ok, [r.line() for r in result.rungs]
    assert result.source_sha256 == sha256(fixed.encode())
    stored = session.store.load("vector_add", "v1")
    assert stored is not None and stored.source_sha256 == sha256(fixed.encode())  # only the fixed run is stored
    assert not session.pool.stopping  # the cancel ended with the run


def test_cancel_stops_a_hang_stores_nothing_and_the_pool_runs_the_next(make_ws, session_for, cpu_pool):
    ws = make_ws(
        ["vector_add"], {"vector_add/v1": BAD / "hangs.py", "vector_add/v2": ROOT / "kernels/vector_add/v2.py"}
    )
    session = session_for(ws, seeds=1, rungs=("compile",))
    hang, good = ws.versions("vector_add")
    ticket = _hang_until_busy(session, hang)
    t0 = time.monotonic()
    assert session.cancel("cancelled with the x key") == hang.key
    with pytest.raises(CancelledError):
        ticket.result(30)
    assert time.monotonic() - t0 < 5.0
    assert session.store.load("vector_add", "v1") is None
    assert session.latest(hang) is None
    res = session.run(good, timeout_s=120)
    assert res.ok and [r.name for r in res.rungs] == ["compile"], [r.line() for r in res.rungs]


def test_withdrawing_the_queue_leaves_nothing_waiting_and_the_running_version_runs_on(make_ws):
    """New-user trial 25, F8: after ``a`` (run all) or a reference edit, ``x`` cancelled the running version only
    and the next started at once; ``X`` withdraws every queued run (``Scheduler.withdraw_queued``) and cancels the
    one under way."""
    ws = make_ws(["vector_add"])
    first, *rest = ws.versions("vector_add")
    bus, ended, notices = EventBus(), [], []
    bus.subscribe(lambda ev: notices.append(ev.message) if isinstance(ev, Notice) else None)
    ladder = FakeLadder()
    s = _scheduler(ladder, bus, ended)
    s.start()
    try:
        running = s.submit(first)
        assert ladder.started.wait(5)
        queued = [s.submit(k) for k in rest]
        assert s.waiting == tuple(k.key for k in rest)
        withdrawn = s.withdraw_queued("withdrawn: every queued run cleared (X)")
        assert withdrawn == [k.key for k in rest] and s.waiting == ()
        assert all(t.cancelled() and t.cancelled_because.startswith("withdrawn") for t in queued)
        assert not running.done()
        assert s.cancel() == first.key
        with pytest.raises(CancelledError):
            running.result(10)
        assert s.wait_idle(10)
    finally:
        s.stop()
    assert len(ladder.ran) == 1  # none of the withdrawn ran
    assert notices[0].startswith(f"{len(rest)} queued run(s) withdrawn (vector_add/v2")


def test_deleting_a_version_cancels_its_run(make_ws):
    """New-user trial 25, F31: a version deleted while it ran was run to the end and its result stored."""
    from types import SimpleNamespace

    from ktui.core.session import Session

    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    calls: list[tuple[str, ...]] = []
    fake = SimpleNamespace(
        ws=ws,
        runs_saves=True,
        store=SimpleNamespace(root=ws.root / ".ktui" / "results"),
        bus=SimpleNamespace(publish=lambda ev: None),
        scheduler=SimpleNamespace(
            withdraw_queued=lambda reason, only: calls.append(("withdraw", reason, *only)),
            cancel=lambda key, reason: calls.append(("cancel", key, reason)),
        ),
    )
    k.path.unlink()
    Session._on_file(fake, k.path, deleted=True)  # type: ignore[arg-type]
    assert calls == [
        ("withdraw", "v1.py was deleted", "vector_add/v1"),
        ("cancel", "vector_add/v1", "cancelled: v1.py was deleted"),
    ]


def test_a_cancel_after_a_failed_first_verdict_keeps_that_failure(make_ws, session_for, cpu_pool):
    """New-user trial 27, F5: ``x`` on a version whose first verdict had already failed sent it back to "not run":
    the failure known was dropped with the cancelled run. That first verdict is now the version's correctness
    verdict ("first verdict (... the full run was cancelled)"), stored, and the interrupted rung is skipped."""
    from ktui.core.events import FirstVerdict

    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "wrong_then_hangs.py"})
    session = session_for(ws, seeds=1, rungs=("compile", "run", "correctness"))
    k = ws.versions("vector_add")[0]
    failed_first = threading.Event()
    session.bus.subscribe(
        lambda ev: failed_first.set() if isinstance(ev, FirstVerdict) and ev.result.status is Status.FAILED else None
    )
    finished: list[LadderResult] = []
    session.bus.subscribe(lambda ev: finished.append(ev.result) if isinstance(ev, LadderFinished) else None)
    ticket = session.submit(k)
    assert failed_first.wait(180), "no failed first verdict"
    assert session.cancel("cancelled with the x key") == k.key
    try:
        ticket.result(60)
    except CancelledError:
        pass
    deadline = time.monotonic() + 30
    while not finished and time.monotonic() < deadline:
        time.sleep(0.1)
    assert finished, "the run never finished"
    res = finished[-1]
    assert not is_cancelled(res), [r.line() for r in res.rungs]
    corr = res.rung("correctness")
    assert corr is not None and corr.status is Status.FAILED, [r.line() for r in res.rungs]
    assert corr.summary.startswith("first verdict (") and "the full run was cancelled" in corr.summary, corr.summary
    assert res.rung("run").status is Status.SKIPPED
    stored = session.store.load("vector_add", "v1")
    assert stored is not None and stored.rung("correctness").status is Status.FAILED
