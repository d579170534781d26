"""The run queue (latest save wins, nothing dropped) and the file watcher (debounced, fast)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

from ktui.core.events import EventBus, Notice, QueueChanged
from ktui.core.scheduler import Scheduler
from ktui.core.watcher import Watcher
from ktui.core.workspace import KernelRef


def test_saves_during_a_run_queue_once_and_the_running_file_runs_again(make_ws):
    ws = make_ws(["vector_add"])
    a, b = ws.versions("vector_add")[:2]
    gate = threading.Event()
    ran: list[tuple[str, str]] = []

    def run(k: KernelRef):
        ran.append((k.key, k.path.read_text()))
        if len(ran) == 1:
            gate.wait(10)

    bus = EventBus()
    waiting_seen: list[tuple[str, ...]] = []
    bus.subscribe(lambda ev: waiting_seen.append(ev.waiting) if isinstance(ev, QueueChanged) else None)
    s = Scheduler(run, bus)
    s.start()
    try:
        s.submit(a)
        deadline = time.monotonic() + 5
        while s.running != a.key and time.monotonic() < deadline:
            time.sleep(0.01)
        # While `a` runs: two saves of b and one of a arrive.
        b.path.write_text("# b, first save\n")
        s.submit(b)
        b.path.write_text("# b, second save\n")
        s.submit(b)
        a.path.write_text("# a, saved during its own run\n")
        s.submit(a)
        assert s.waiting == (b.key, a.key)  # b once, a queued again behind it
        gate.set()
        assert s.wait_idle(10)
    finally:
        s.stop()
    assert [key for key, _ in ran] == [a.key, b.key, a.key]
    assert ran[1][1] == "# b, second save\n"  # the latest content of b ran
    assert ran[2][1] == "# a, saved during its own run\n"
    assert (b.key, a.key) in waiting_seen  # the screen was told what waits


def test_watcher_reports_a_save_once_within_half_a_second(make_ws):
    ws = make_ws(["vector_add"])
    seen: list[tuple[str, float]] = []
    w = Watcher(ws, lambda p, deleted: seen.append((p.name, time.monotonic())), debounce_s=0.1)
    w.start()
    try:
        time.sleep(0.3)
        path = ws.root / "kernels/vector_add/v1.py"
        t0 = time.monotonic()
        for i in range(5):  # an editor's burst of writes
            path.write_text(path.read_text() + f"# {i}\n")
        (ws.root / "kernels/vector_add/notes.txt").write_text("not python\n")
        deadline = time.monotonic() + 3
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.4)
    finally:
        w.stop()
    assert [name for name, _ in seen] == ["v1.py"]
    assert seen[0][1] - t0 < 0.5


def test_watcher_sees_atomic_rename_saves(make_ws):
    ws = make_ws(["vector_add"])
    seen = []
    w = Watcher(ws, lambda p, deleted: seen.append((p.name, deleted)), debounce_s=0.05)
    w.start()
    try:
        time.sleep(0.3)
        tmp = ws.root / "kernels/vector_add/.v2.py.swp"
        tmp.write_text("def custom_kernel(d):\n    return d\n")
        tmp.replace(ws.root / "kernels/vector_add/v2.py")
        deadline = time.monotonic() + 3
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
    finally:
        w.stop()
    assert ("v2.py", False) in seen


def test_a_failing_callback_is_a_notice_and_a_log_line_and_the_watcher_goes_on(make_ws, capfd):
    from ktui.core.events import Notice
    from ktui.core.log import close_log, log_path, open_log

    ws = make_ws(["vector_add"])
    bus = EventBus()
    notices: list[Notice] = []
    bus.subscribe(lambda ev: notices.append(ev) if isinstance(ev, Notice) else None)
    calls: list[str] = []

    def on_change(p, deleted):
        calls.append(p.name)
        raise OSError("disk on fire")

    handler = open_log(ws.state_dir)
    w = Watcher(ws, on_change, debounce_s=0.05, bus=bus)
    w.start()
    try:
        time.sleep(0.3)
        path = ws.root / "kernels/vector_add/v1.py"
        for i in range(2):  # two saves, far enough apart to be two calls
            path.write_text(path.read_text() + f"# {i}\n")
            deadline = time.monotonic() + 3
            while len(calls) <= i and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)
    finally:
        w.stop()
        close_log(handler)
    assert calls == ["v1.py", "v1.py"]  # the watcher survived the first failure
    assert len(notices) == 1 and notices[0].level == "error"  # once per kind of failure
    assert "v1.py: OSError: disk on fire" in notices[0].message
    log = log_path(ws.state_dir).read_text()
    assert log.count("the watcher's callback failed") == 2 and "OSError: disk on fire" in log
    assert capfd.readouterr().err == ""


def test_quitting_during_a_run_is_quick_and_stores_no_verdict(make_ws):
    from ktui.core.events import RungStarted
    from ktui.core.ladder import LadderOptions
    from ktui.core.session import Session

    from .conftest import BAD

    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "hangs.py"})
    session = Session(
        ws,
        "cpu",
        options=LadderOptions(timeouts={"compile": 120.0, "run": 120.0, "correctness": 120.0, "benchmark": 60.0}),
        watch=False,
    )
    started = threading.Event()
    session.bus.subscribe(lambda ev: started.set() if isinstance(ev, RungStarted) and ev.rung == "compile" else None)
    session.start()
    for w in session.pool.workers:
        w.ensure_ready()
    session.submit(ws.versions("vector_add")[0])
    assert started.wait(60)
    time.sleep(2.0)  # the hanging kernel's dry call is under way in the compiler worker
    assert session.scheduler.running == "vector_add/v1"
    t0 = time.monotonic()
    session.stop()
    assert time.monotonic() - t0 < 6.0
    assert session.store.load("vector_add", "v1") is None  # the shutdown says nothing about the kernel


def test_releasing_a_queued_ticket_withdraws_its_run_unless_another_submit_holds_it(make_ws):
    """``Scheduler.release`` (an MCP client cancelled its request): a run still waiting behind another leaves the
    queue and never runs, its ticket cancelled with the reason and a notice; a ticket two submits share stays
    until both gave it up; releasing the running one cancels it (``on_cancel``), a finished one does nothing."""
    ws = make_ws(["vector_add"])
    a, b, c = ws.versions("vector_add")[:3]
    gate = threading.Event()
    ran: list[str] = []
    cancels: list[str] = []

    def run(k: KernelRef):
        ran.append(k.key)
        if k.key == a.key:
            gate.wait(10)
        return None

    def on_cancel(reason: str) -> list[str]:
        cancels.append(reason)
        gate.set()  # the run under way returns at once, as the pool's cancel makes it
        return ["candidate"]

    bus = EventBus()
    notices: list[str] = []
    waiting_seen: list[tuple[str, ...]] = []
    bus.subscribe(lambda ev: notices.append(ev.message) if isinstance(ev, Notice) else None)
    bus.subscribe(lambda ev: waiting_seen.append(ev.waiting) if isinstance(ev, QueueChanged) else None)
    s = Scheduler(run, bus, on_cancel=on_cancel)
    s.start()
    try:
        ta = s.submit(a)
        deadline = time.monotonic() + 5
        while s.running != a.key and time.monotonic() < deadline:
            time.sleep(0.01)
        tb = s.submit(b)
        tc1, tc2 = s.submit(c), s.submit(c)  # two requests for c share one queued run
        assert tc1 is tc2 and tc1.holders == 2 and s.waiting == (b.key, c.key)
        assert s.release(tb, "cancelled by the MCP client") == "withdrawn"
        assert s.waiting == (c.key,) and tb.cancelled() and tb.cancelled_because == "cancelled by the MCP client"
        with pytest.raises(CancelledError):
            tb.result(0)
        assert s.release(tc1, "cancelled by the MCP client") == "kept" and s.waiting == (c.key,)
        assert s.release(ta, "cancelled by the MCP client") == "cancelled"
        assert cancels == ["cancelled by the MCP client"]
        assert s.wait_idle(10)
        assert tc2.result(5) is None and s.release(tc2) == "done"  # c ran for the request still waiting on it
    finally:
        s.stop()
    assert ran == [a.key, c.key]  # b never ran
    assert f"{b.key}: queued run withdrawn, cancelled by the MCP client (it never ran)" in notices
    assert (c.key,) in waiting_seen  # the queue shown without b
    assert ta.cancelled() and ta.cancelled_because == "cancelled by the MCP client"


def test_a_cancelled_ticket_wakes_a_batch_waiting_on_it():
    """``Future.cancel`` alone leaves ``as_completed`` waiting until its timeout (only an executor's
    ``set_running_or_notify_cancel`` tells the waiters); a batch of tickets must end at the cancel."""
    from concurrent.futures import Future, as_completed

    from ktui.core.scheduler import Ticket, cancel_notifying

    a, b = Ticket("p/v1"), Ticket("p/v2")
    threading.Timer(0.1, b.cancel).start()
    threading.Timer(0.2, lambda: a.set_result(None)).start()
    t0 = time.monotonic()
    done = list(as_completed([a, b], timeout=20))
    assert len(done) == 2 and b.cancelled() and time.monotonic() - t0 < 10
    assert b.cancel() is True and b.cancelled()  # a second cancel neither raises nor changes it
    plain: Future = Future()
    threading.Timer(0.1, lambda: cancel_notifying(plain)).start()
    assert list(as_completed([plain], timeout=20)) == [plain] and plain.cancelled()
    assert cancel_notifying(plain) is True and not cancel_notifying(a)  # a finished future is not cancelled


def _queue_behind_a_running(make_ws, steps) -> tuple[list[str], list[str]]:
    """Run vector_add's first version (held until ``steps`` are done) and call ``steps(s, b, c, d)`` while it runs
    (b: vector_add's second version, c and d: softmax's first two); returns the keys in the order they ran and the
    four versions' keys (a, b, c, d)."""
    ws = make_ws(["vector_add", "softmax"])
    a, b = ws.versions("vector_add")[:2]
    c, d = ws.versions("softmax")[:2]
    gate = threading.Event()
    ran: list[str] = []

    def run(k: KernelRef):
        ran.append(k.key)
        if len(ran) == 1:
            gate.wait(10)

    s = Scheduler(run, EventBus())
    s.start()
    try:
        s.submit(a)
        deadline = time.monotonic() + 5
        while s.running != a.key and time.monotonic() < deadline:
            time.sleep(0.01)
        steps(s, b, c, d)
        gate.set()
        assert s.wait_idle(10)
    finally:
        s.stop()
    return ran, [k.key for k in (a, b, c, d)]


def test_a_users_run_of_one_version_is_not_overtaken_by_later_saves(make_ws):
    """New-user trial 30, F5: versions queued with `r` ran after files saved later (a save went ahead of every
    other reason). A ``request`` (`r`, `p`, `t`) queues with the saves, in order: ahead of start-up's reruns, behind
    what was saved or requested before it, ahead of what is saved after it."""

    def steps(s, b, c, d):
        s.submit(c)  # stale at start-up
        s.submit(b, why="request")  # the user's r
        s.submit(d, why="save")  # saved after it
        assert s.waiting == (b.key, d.key, c.key)

    ran, (a, b, c, d) = _queue_behind_a_running(make_ws, steps)
    assert ran == [a, b, d, c]


def test_a_save_waits_ahead_of_reruns_and_behind_earlier_saves(make_ws):
    """New-user trial 19: the version being edited waited behind start-up's stale versions (6 minutes)."""

    def steps(s, b, c, d):
        s.submit(c)  # stale at start-up
        s.submit(d)
        s.submit(b, why="save")
        assert s.waiting == (b.key, c.key, d.key)
        s.submit(d, why="save")  # a waiting rerun saved: ahead of the reruns, behind the earlier save
        assert s.waiting == (b.key, d.key, c.key)

    ran, (a, b, c, d) = _queue_behind_a_running(make_ws, steps)
    assert ran == [a, b, d, c]
