"""Tickets: every submit returns a future of its run's result; a save of content that already ran is skipped, a
rerun always runs; and ``Session.result_for`` waits on its ticket (no sleeping, no polling). Fake ladders: no
workers."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from ktui.core.events import EventBus
from ktui.core.results import LadderResult, RungResult, Status
from ktui.core.scheduler import Scheduler, Ticket
from ktui.core.store import sha256
from ktui.core.workspace import KernelRef


def fake_ladder(ran: list[str], gate: threading.Event | None = None):
    def run(k: KernelRef, rungs=None) -> LadderResult:
        if gate is not None:
            gate.wait(10)
        ran.append(k.path.read_text())
        ref = k.root / "references" / f"{k.problem}.py"
        return LadderResult(
            k.problem,
            k.version,
            f"kernels/{k.problem}/{k.version}.py",
            {"type": "cpu"},
            # a verdict (compile and dumps alone have none, and a save of that content is not skipped: it needs a run)
            [RungResult("compile", Status.OK), RungResult("correctness", Status.OK)],
            source_sha256=sha256(k.path.read_bytes()),
            reference_sha256=sha256(ref.read_bytes()),
        )

    return run


@pytest.fixture
def sched():
    made = []

    def make(run) -> Scheduler:
        s = Scheduler(run, EventBus())
        s.start()
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()


def test_a_save_of_content_that_already_ran_is_skipped_and_a_rerun_runs(make_ws, sched):
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    ran: list[str] = []
    s = sched(fake_ladder(ran))
    first = s.submit(k)
    assert isinstance(first, Ticket)
    r1 = first.result(10)
    assert r1.source_sha256 == sha256(k.path.read_bytes()) and len(ran) == 1
    saved = s.submit(k, why="save")  # e.g. the watcher's save of what the agent just wrote and ran
    assert saved.result(10) is r1 and saved.skipped and len(ran) == 1
    again = s.submit(k)  # `r`
    assert again.result(10) is not r1 and not again.skipped and len(ran) == 2
    k.path.write_text(k.path.read_text() + "# edited\n")
    edited = s.submit(k, why="save")
    assert not edited.skipped and edited.result(10).source_sha256 == sha256(k.path.read_bytes()) and len(ran) == 3
    ws.reference_path("vector_add").write_text(ws.reference_path("vector_add").read_text() + "# edited\n")
    assert s.submit(k, why="save").result(10) is not None and len(ran) == 4  # a new reference runs again


def test_a_save_during_the_run_of_the_same_content_is_skipped_when_its_turn_comes(make_ws, sched):
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    ran: list[str] = []
    gate = threading.Event()
    s = sched(fake_ladder(ran, gate))
    mine = s.submit(k)  # the agent's run_ladder after its write ...
    saved = s.submit(k, why="save")  # ... and the watcher's save of it, while waiting: the same run serves both
    assert saved is mine
    while s.running != k.key:
        threading.Event().wait(0.01)
    late = s.submit(k, why="save")  # the save seen while it runs queues a new turn ...
    assert late is not mine and s.waiting == (k.key,)
    gate.set()
    assert mine.result(10) is not None
    assert late.result(10) is mine.result() and late.skipped  # ... which is skipped: nothing changed
    assert len(ran) == 1


def test_stop_cancels_waiting_tickets_and_a_failure_reaches_the_ticket(make_ws, sched):
    ws = make_ws(["vector_add"])
    a, b = ws.versions("vector_add")[:2]
    gate = threading.Event()

    def run(k: KernelRef, rungs=None):
        gate.wait(10)
        raise RuntimeError("the ladder broke")

    s = sched(run)
    ta, tb = s.submit(a), s.submit(b)
    while s.running != a.key:
        threading.Event().wait(0.01)
    s.stop(timeout_s=0.0)
    gate.set()
    with pytest.raises(RuntimeError, match="the ladder broke"):
        ta.result(10)
    with pytest.raises(CancelledError):
        tb.result(10)
    assert s.submit(a).cancelled()


def _fake_session(ws, monkeypatch, ran: list[str]):
    """A ``Session`` whose ladder is ``fake_ladder`` (storing and publishing its result as ``Ladder.run`` does),
    with no workers started."""
    from ktui.core.events import LadderFinished
    from ktui.core.session import Session

    session = Session(ws, "cpu", watch=False)
    fake = fake_ladder(ran)

    def run(kernel, rungs=None):
        res = fake(kernel, rungs)
        session.store.save(res)
        session.bus.publish(LadderFinished(key=kernel.key, run_id=len(ran), result=res))
        return res

    session.scheduler._run_ladder = run
    monkeypatch.setattr(session.pool, "start", lambda: None)
    monkeypatch.setattr(session.pool, "stop", lambda grace_s=3.0: None)
    return session


def test_session_result_for_waits_on_its_ticket_and_reuses_a_current_result(make_ws, monkeypatch):
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    ran: list[str] = []
    session = _fake_session(ws, monkeypatch, ran)
    session.start()
    try:
        r = session.result_for(k, timeout_s=10)
        assert r.source_sha256 == sha256(k.path.read_bytes()) and len(ran) == 1
        assert session.result_for(k, timeout_s=10) is r and len(ran) == 1  # current already: no run
        assert session.result_for(k, timeout_s=10, rungs=("dumps",)) is not r and len(ran) == 2  # it lacks dumps
        assert session.run(k, timeout_s=10) is not r and len(ran) == 3
    finally:
        session.stop()


def test_a_real_session_on_the_shared_pool_runs_once_for_the_agents_write_and_the_watchers_save(make_ws, session_for):
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    session = session_for(ws, seeds=1, distributions=False, layouts=False, rungs=("compile", "run", "correctness"))
    r = session.result_for(k, timeout_s=300)
    assert r.ok and [x.name for x in r.rungs] == ["compile", "run", "correctness"]
    assert session.store.load("vector_add", k.version).source_sha256 == r.source_sha256
    session._on_file(k.path, deleted=False)  # the watcher's report of the same save
    assert session.scheduler.wait_idle(60)
    assert session.scheduler.last(k.key).started_at == r.started_at  # skipped: no second run


def test_a_copy_of_a_version_takes_its_verdict_on_save_and_a_rerun_or_an_edit_runs_it(make_ws, monkeypatch):
    """``n`` copies v1 to the next vN.py: the watcher's save of those bytes gets v1's verdict as the copy's
    (stored, published, said), with no second run; ``r`` runs the copy; an edit of the copy runs it."""
    from ktui.core import report
    from ktui.core.events import LadderFinished, Notice

    ws = make_ws(["vector_add"])
    v1 = ws.versions("vector_add")[0]
    ran: list[str] = []
    session = _fake_session(ws, monkeypatch, ran)
    seen: list = []
    session.bus.subscribe(seen.append)
    session.start()
    try:
        r1 = session.result_for(v1, timeout_s=10)
        assert len(ran) == 1
        copy = session.new_version(v1)
        session._on_file(copy.path, deleted=False)  # the watcher's report of the new file
        assert session.scheduler.wait_idle(10)
        assert len(ran) == 1  # no second run of the same bytes
        got = session.latest(copy)
        assert got.version == copy.version and got.kernel == f"kernels/vector_add/{copy.version}.py"
        assert got.carried_from == v1.version and got.started_at == r1.started_at
        assert [x.status for x in got.rungs] == [x.status for x in r1.rungs]
        stored = session.store.load("vector_add", copy.version)
        assert stored.carried_from == v1.version and stored.source_sha256 == r1.source_sha256
        assert any(isinstance(e, LadderFinished) and e.key == copy.key and e.run_id == 0 for e in seen)
        notes = [e.message for e in seen if isinstance(e, Notice)]
        assert any(f"its verdict stands for {copy.version}" in m and v1.version in m for m in notes), notes
        text = "".join(t for t, _ in report.details(copy, got))
        assert f"the run of {v1.version}, the same source and reference" in text
        session._on_file(copy.path, deleted=False)  # saved again unchanged: still nothing runs
        assert session.scheduler.wait_idle(10) and len(ran) == 1
        assert session.run(copy, timeout_s=10).carried_from is None and len(ran) == 2  # `r` runs it
        copy.path.write_text(copy.path.read_text() + "# an idea\n")
        session._on_file(copy.path, deleted=False)
        assert session.scheduler.wait_idle(10) and len(ran) == 3  # an edit runs
        assert session.latest(copy).carried_from is None
    finally:
        session.stop()


def test_a_copy_does_not_take_a_verdict_on_another_reference_or_from_a_broken_run(make_ws, monkeypatch):
    from ktui.core.session import Session

    ws = make_ws(["vector_add"])
    v1 = ws.versions("vector_add")[0]
    session = Session(ws, "cpu", watch=False)
    content = (sha256(v1.path.read_bytes()), sha256(ws.reference_path("vector_add").read_bytes()))
    good = fake_ladder([])(v1)
    session.store.save(good)
    copy = session.new_version(v1)
    assert session._carry(copy, content).carried_from == v1.version
    session.store.path("vector_add", copy.version).unlink()
    session.store.judged_path("vector_add", copy.version).unlink()  # (the copy never had a verdict of its own)
    assert session._carry(copy, (content[0], "0" * 64)) is None  # the reference changed since v1's run
    from ktui.core.results import ErrorInfo

    broken = LadderResult(
        "vector_add", v1.version, good.kernel, {"type": "cpu"},
        [RungResult("compile", Status.OK), RungResult("run", Status.FAILED, error=ErrorInfo("WorkerStartError", "no"))],
        source_sha256=content[0], reference_sha256=content[1],
    )  # fmt: skip
    session.store.save(broken)  # a worker that could not start says nothing about the kernel
    assert session._carry(copy, content) is None
    session.store.save(good)
    cuda = LadderResult(good.problem, good.version, good.kernel, {"type": "cuda"}, good.rungs, content[0], content[1])
    session.store.save(cuda)
    assert session._carry(copy, content) is None  # a verdict of another device is not this session's


def test_a_reference_restored_after_a_typo_gives_the_version_back_its_verdict_on_that_content(make_ws):
    """New-user trial 23, F8 (trial 21, F15): a reference typo's error replaced v1's ok verdict; restoring the
    reference byte for byte ran v1 again (3 minutes on the CPU). The store keeps each version's last judged result
    (``ResultStore.judged``: a reference error does not replace it), and a save of that very content takes it."""
    from ktui.core.events import Notice
    from ktui.core.results import ErrorInfo
    from ktui.core.session import Session

    ws = make_ws(["vector_add"])
    v1 = ws.versions("vector_add")[0]
    session = Session(ws, "cpu", watch=False)
    notes: list[str] = []
    session.bus.subscribe(lambda e: notes.append(e.message) if isinstance(e, Notice) else None)
    content = (sha256(v1.path.read_bytes()), sha256(ws.reference_path("vector_add").read_bytes()))
    good = fake_ladder([])(v1)
    session.store.save(good)
    typo = LadderResult(
        "vector_add", v1.version, good.kernel, {"type": "cpu"},
        [RungResult("compile", Status.FAILED, error=ErrorInfo("ProblemError", "reference error (references/"
                    "vector_add.py:15 in ref_kernel): ref_kernel raised AttributeError"))],
        source_sha256=content[0], reference_sha256="1" * 64,
    )  # fmt: skip
    session.store.save(typo)
    assert session.store.load("vector_add", v1.version).failed_rung.name == "compile"
    assert session.store.judged("vector_add", v1.version).started_at == good.started_at
    got = session._carry(v1, content)  # the reference restored: the content of v1's verdict
    assert got is not None and got.carried_from is None and got.started_at == good.started_at
    assert session.store.load("vector_add", v1.version).started_at == good.started_at
    assert any("its source and reference are again those of its verdict of" in m for m in notes), notes
    assert session._carry(v1, (content[0], "1" * 64)) is None  # the typo's content: no verdict to take


def test_a_kernel_restored_after_a_typo_gives_the_version_back_its_verdict_on_that_content(make_ws):
    """New-user trial 25, F7: a kernel typo's failed compile replaced v1's judged result, so restoring the file byte
    for byte ran the whole ladder again. The store keeps each version's judged results by content (the last
    ``JUDGED_KEPT``), and a save of a content judged before takes its verdict."""
    from ktui.core.results import ErrorInfo
    from ktui.core.session import Session

    ws = make_ws(["vector_add"])
    v1 = ws.versions("vector_add")[0]
    session = Session(ws, "cpu", watch=False)
    ref_sha = sha256(ws.reference_path("vector_add").read_bytes())
    content = (sha256(v1.path.read_bytes()), ref_sha)
    good = fake_ladder([])(v1)
    session.store.save(good)
    typo = LadderResult(
        "vector_add", v1.version, good.kernel, {"type": "cpu"},
        [RungResult("compile", Status.FAILED, error=ErrorInfo("SyntaxError", "unmatched ')' (v1.py, line 17)"))],
        source_sha256="2" * 64, reference_sha256=ref_sha, started_at=good.started_at + 60,
    )  # fmt: skip
    session.store.save(typo)
    assert session.store.judged("vector_add", v1.version).started_at == typo.started_at  # the last judged: the typo
    got = session._carry(v1, content)  # the kernel restored: the content of v1's verdict
    assert got is not None and got.started_at == good.started_at and got.ok
    assert session._carry(v1, ("3" * 64, ref_sha)) is None  # a content never judged
