"""The Ray engine (``ktui.core.engines.ray_ladders``) on a local Ray instance on the CPU (2 CPUs, a small object
store; the Triton interpreter as the device): two actors run two versions at once, each result says where it ran; an
actor whose worker crashed is restarted by Ray and serves again; an actor killed in the middle of a ladder comes
back and the version runs again. ``ray`` is in the dev extra: these run in CI."""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time

import pytest
import ray

from ktui.core.engines.ray_ladders import RayLadders
from ktui.core.events import LadderStarted, Notice, RungFinished
from ktui.core.ladder import LadderOptions
from ktui.core.session import Session
from ktui.core.workspace import KernelRef, Workspace

from .conftest import BAD, ROOT

TINY = '''"""out = a + b on a few small sizes: a ladder the interpreter climbs in seconds."""
import torch


def generate_input(seed, n):
    return torch.randn(n), torch.randn(n)


def ref_kernel(data):
    a, b = data
    return a + b


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 20}]
fuzz = False
input_distributions = ["native"]
contiguous_only = True
'''

# The rungs that judge; the extra case families off: the engine is under test here, not the checks.
OPTIONS = LadderOptions(
    rungs=("compile", "run", "correctness"), distributions=False, layouts=False, near_duplicates=False, fuzz=False
)
HONEST = (ROOT / "kernels/vector_add/v1.py").read_text()


@pytest.fixture(scope="module")
def ray_engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("rayws")
    (root / "references").mkdir()
    (root / "references" / "tiny.py").write_text(TINY)
    k = root / "kernels" / "tiny"
    k.mkdir(parents=True)
    (k / "v1.py").write_text(HONEST)
    (k / "v2.py").write_text(HONEST.replace("a + b, mask=mask", "a - b, mask=mask"))
    (k / "v3.py").write_text(HONEST + "\n# a copy of v1\n")
    shutil.copy(BAD / "segfaults.py", k / "v4.py")
    ws = Workspace(root)
    ray.init(
        address="local",
        num_cpus=2,
        object_store_memory=80 << 20,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    engine = RayLadders(ws, "cpu", OPTIONS, actors=2, spares=False)
    try:
        engine.device_info(timeout_s=300)
        wait_for(lambda: all(engine.placements()), 300, "both actors said hello")
        yield ws, engine
    finally:
        engine.stop()
        ray.shutdown()


def wait_for(cond, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, f"timed out waiting until {what}"
        time.sleep(0.2)


def session_on(ws, engine) -> tuple[Session, list]:
    session = Session(ws, options=OPTIONS, watch=False, engine=engine)
    events: list = []
    session.bus.subscribe(events.append)
    session.start()
    return session, events


def kernel(ws, version: str) -> KernelRef:
    return KernelRef("tiny", version, ws.root)


def test_two_versions_run_at_once_each_on_its_own_actor_and_each_result_says_where(ray_engine):
    ws, engine = ray_engine
    session, events = session_on(ws, engine)
    try:
        got = dict((k.version, r) for k, r in session.results_for([kernel(ws, "v1"), kernel(ws, "v2")]))
    finally:
        session.stop()
    ok, wrong = got["v1"], got["v2"]
    assert ok.ok, [r.line() for r in ok.rungs]
    assert wrong.failed_rung is not None and wrong.failed_rung.name == "correctness"
    # each on its own actor, at the same time
    assert {ok.device["placement"]["actor"], wrong.device["placement"]["actor"]} == {0, 1}
    assert ok.started_at < wrong.started_at + wrong.seconds and wrong.started_at < ok.started_at + ok.seconds
    # the device fingerprint of where it ran: the candidate worker's hello and the actor's placement
    for r in (ok, wrong):
        assert r.device["type"] == "cpu" and r.device["interpreter"] is True and r.device["torch"]
        where = r.device["placement"]
        assert where["engine"] == "ray" and where["host"] and where["node_id"] and where["gpu_ids"] == []
        assert where["pid"] == engine.placements()[where["actor"]]["pid"]
    assert session.store.load("tiny", "v1").ok and not session.store.load("tiny", "v2").ok
    started = {e.key: e.run_id for e in events if isinstance(e, LadderStarted)}
    assert set(started) == {"tiny/v1", "tiny/v2"} and len(set(started.values())) == 2
    rungs = {(e.key, e.result.name) for e in events if isinstance(e, RungFinished) and e.run_id == started[e.key]}
    assert ("tiny/v1", "correctness") in rungs and ("tiny/v2", "correctness") in rungs  # forwarded as they ran
    for slot in (0, 1):  # each actor's workers log apart
        assert (ws.state_dir / "logs" / f"ray-{slot}" / "candidate.log").is_file()


def test_an_actor_whose_kernel_crashed_its_worker_is_restarted_and_serves_again(ray_engine):
    ws, engine = ray_engine
    session, events = session_on(ws, engine)
    try:
        [(_, crashed)] = list(session.results_for([kernel(ws, "v4")]))
        assert crashed.failed_rung is not None and crashed.failed_rung.error.type == "WorkerCrashed"
        assert "SIGSEGV" in crashed.failed_rung.error.message
        slot, old = crashed.device["placement"]["actor"], crashed.device["placement"]["pid"]
        notes = [e.message for e in events if isinstance(e, Notice)]
        said = rf"ray actor {slot} \(pid {old}\) restarted after tiny/v4: the (compiler|candidate) worker restarted: "
        said += "crashed during"
        assert any(re.match(said, n) for n in notes), notes  # (on the CPU the compile rung runs in the compiler)
        wait_for(lambda: engine.placements()[slot].get("pid") not in (None, old), 180, "the actor came back")
        assert engine.placements()[slot]["restarts"] == 1
        wait_for(lambda: not _alive(old), 30, "the old actor process is gone")
        # both actors busy: the restarted one runs a version, on its new process
        got = list(session.results_for([kernel(ws, "v1"), kernel(ws, "v3")]))
    finally:
        session.stop()
    assert all(r.ok for _, r in got), [(k.key, r.failed_rung) for k, r in got]
    again = [r for _, r in got if r.device["placement"]["actor"] == slot]
    assert len(again) == 1 and again[0].device["placement"]["pid"] == engine.placements()[slot]["pid"] != old


def test_an_actor_killed_in_the_middle_of_a_ladder_comes_back_and_the_version_runs_again(ray_engine):
    ws, engine = ray_engine
    (ws.root / "kernels/tiny/v5.py").write_text(HONEST + "\n# v5\n")
    session, events = session_on(ws, engine)
    killed: list[tuple[int, int]] = []

    def kill_when_running(ev):
        if isinstance(ev, RungFinished) and ev.key == "tiny/v5" and ev.result.name == "compile" and not killed:
            busy = [s for s in engine._slots if s.job is not None and s.job.kernel.key == "tiny/v5"]
            pid = busy[0].hello["placement"]["pid"]
            killed.append((busy[0].index, pid))
            threading.Thread(target=os.kill, args=(pid, signal.SIGKILL)).start()

    session.bus.subscribe(kill_when_running)
    try:
        [(_, res)] = list(session.results_for([kernel(ws, "v5")]))
    finally:
        session.stop()
    assert killed, "the run was not caught in the middle"
    slot, pid = killed[0]
    notes = [e.message for e in events if isinstance(e, Notice)]
    assert any(
        n.startswith(f"ray actor {slot} died while running tiny/v5") and n.endswith("tiny/v5 runs again") for n in notes
    ), notes
    assert res.ok, [r.line() for r in res.rungs]
    assert res.device["placement"]["pid"] != pid  # it ran again, elsewhere or on the actor Ray started again
    assert session.store.load("tiny", "v5").ok
    wait_for(lambda: engine.placements()[slot].get("pid") not in (None, pid), 180, "the killed actor came back")
    assert engine.placements()[slot]["restarts"] >= 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
