"""The engine seam (``ktui.core.engines``) without Ray: a ``Session`` given an engine sends its ladders there (a batch
at once, the scheduler's runs one at a time), stores and publishes each result as it finishes, never sends the same
content twice, never stores a run that says nothing about the kernel; the agent gets a batch's results together,
ranked; ``--engine ray`` without Ray is a clear environment error. The real Ray engine is in test_ray_engine.py."""

from __future__ import annotations

import builtins
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

import pytest

from ktui.core import report
from ktui.core.engines import RAY_MISSING, EngineError, Outcome, make_engine
from ktui.core.events import LadderFinished, LadderStarted, Notice, RungFinished
from ktui.core.ladder import LadderOptions
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status, placement_label
from ktui.core.session import Session
from ktui.core.store import sha256
from ktui.core.timeouts import LIMIT_KEYS
from ktui.core.workspace import KernelRef

from .conftest import ROOT


class FakeEngine:
    """An engine whose runs the test ends: ``finish(key, result)``; records what was submitted and cancelled."""

    name = "fake"
    device = "cpu"

    def __init__(self):
        self.submitted: list[tuple[str, tuple[str, ...] | None, dict[str, float]]] = []
        self.runs: dict[str, tuple[Future, object, int]] = {}
        self.cancelled: list[tuple[str, str]] = []
        self.changed = threading.Condition()
        self.stopped = False

    def submit(self, kernel, rungs, limits, publish):
        fut: Future = Future()
        with self.changed:
            run_id = 100 + len(self.submitted)
            self.submitted.append((kernel.key, rungs, dict(limits)))
            self.runs[kernel.key] = (fut, publish, run_id)
            self.changed.notify_all()
        publish(LadderStarted(key=kernel.key, run_id=run_id, source_sha256="", rungs=("compile",)))
        return fut

    def wait_submitted(self, n: int, timeout_s: float = 10.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.submitted) >= n, timeout_s), self.submitted

    def finish(self, key: str, result: LadderResult, broken: str = "") -> None:
        fut, publish, run_id = self.runs[key]
        publish(RungFinished(key=key, run_id=run_id, result=result.rungs[0]))
        fut.set_result(Outcome(result, run_id, [("prepare", 1.5)], broken))

    def cancel(self, key, reason):
        self.cancelled.append((key, reason))
        fut, _, _ = self.runs[key]
        fut.cancel()
        return [f"fake {key}"]

    def device_info(self):
        return {"type": "cpu", "name": "cpu"}

    def describe(self):
        return "fake: 2 actors"

    def stop(self):
        self.stopped = True


def result_of(kernel: KernelRef, *statuses: tuple[str, Status], speedup: float | None = None) -> LadderResult:
    """A result of ``kernel``'s current content with the given rungs (a benchmark at ``speedup`` when given)."""
    rungs = [RungResult(name, st) for name, st in statuses]
    if speedup is not None:
        rungs.append(RungResult("benchmark", Status.OK, figures={"specs": [{"label": "big", "speedup": speedup}]}))
    return LadderResult(
        problem=kernel.problem,
        version=kernel.version,
        kernel=str(kernel.path.relative_to(kernel.root)),
        device={"type": "cpu", "placement": {"engine": "ray", "host": "node7", "actor": 1, "gpu_ids": []}},
        rungs=rungs,
        source_sha256=sha256(kernel.path.read_bytes()),
        reference_sha256=sha256((kernel.root / "references" / f"{kernel.problem}.py").read_bytes()),
    )


OK = (("compile", Status.OK), ("run", Status.OK), ("correctness", Status.OK))


@pytest.fixture
def engine_session(make_ws):
    ws = make_ws(["vector_add"])
    engine = FakeEngine()
    session = Session(ws, options=LadderOptions(rungs=("compile", "run", "correctness")), watch=False, engine=engine)
    events: list = []
    session.bus.subscribe(events.append)
    session.start()
    yield ws, engine, session, events
    session.stop()
    assert not engine.stopped  # the caller who made the engine stops it, as with a given pool


def _collect(session, kernels, out: list) -> threading.Thread:
    t = threading.Thread(target=lambda: out.extend(session.results_for(kernels)), daemon=True)
    t.start()
    return t


def test_a_batch_goes_to_the_engine_at_once_and_each_result_is_stored_and_published_as_it_finishes(engine_session):
    ws, engine, session, events = engine_session
    v1, v2, v3 = ws.versions("vector_add")
    got: list = []
    t = _collect(session, [v1, v2, v3], got)
    engine.wait_submitted(3)  # all three sent before any came back: with Ray, each on its own actor
    assert [k for k, _, _ in engine.submitted] == ["vector_add/v1", "vector_add/v2", "vector_add/v3"]
    assert set(engine.submitted[0][2]) == set(LIMIT_KEYS)  # each run's time limits from the session's policy
    assert session.pool.workers[0].pid is None  # the session's own pool never started
    engine.finish("vector_add/v3", result_of(v3, *OK))
    engine.finish("vector_add/v1", result_of(v1, ("compile", Status.OK), ("run", Status.FAILED)))
    engine.finish("vector_add/v2", result_of(v2, *OK))
    t.join(10)
    assert [k.key for k, _ in got] == ["vector_add/v3", "vector_add/v1", "vector_add/v2"]  # as they finished
    stored = session.store.load("vector_add", "v1")
    assert stored is not None and stored.failed_rung.name == "run"
    assert stored.device["placement"]["host"] == "node7"  # where it ran travels with the result
    finished = [e for e in events if isinstance(e, LadderFinished)]
    assert [(e.key, e.run_id) for e in finished] == [
        ("vector_add/v3", 102),
        ("vector_add/v1", 100),
        ("vector_add/v2", 101),
    ]
    started = {e.key: e.run_id for e in events if isinstance(e, LadderStarted)}
    assert started == {"vector_add/v1": 100, "vector_add/v2": 101, "vector_add/v3": 102}  # the engine's run ids
    assert any(isinstance(e, Notice) and e.message == "fake: 2 actors" for e in events)
    # the judge's seconds of each run (the engine's prepare: 1.5 s) feed the next runs' limits, as on the local pool
    assert session.reference_times.get("cpu", "vector_add") == {"run": 1.5, "correctness": 1.5}
    # the same content again: this session's results, nothing sent
    assert [k.key for k, _ in session.results_for([v1, v2])] == ["vector_add/v1", "vector_add/v2"]
    assert len(engine.submitted) == 3


def test_a_save_of_content_under_way_on_the_engine_waits_for_that_run_and_a_later_save_is_skipped(engine_session):
    ws, engine, session, events = engine_session
    v1 = ws.versions("vector_add")[0]
    got: list = []
    t = _collect(session, [v1], got)  # the agent's batch
    engine.wait_submitted(1)
    save = session.scheduler.submit(v1, why="save")  # the watcher sees the agent's write
    time.sleep(0.3)
    assert len(engine.submitted) == 1  # not sent twice
    engine.finish("vector_add/v1", result_of(v1, *OK))
    t.join(10)
    assert save.result(10).ok and got[0][1].ok
    again = session.scheduler.submit(v1, why="save")  # a save of content that already ran on the engine
    assert again.result(10).ok and again.skipped and len(engine.submitted) == 1
    (v1.path).write_text(v1.path.read_text() + "\n# changed\n")  # new content: a new run
    session.scheduler.submit(v1, why="save")
    engine.wait_submitted(2)


def test_a_broken_run_is_published_never_stored_and_a_cancelled_one_gives_nothing(engine_session):
    ws, engine, session, events = engine_session
    v1, v2, _ = ws.versions("vector_add")
    got: list = []
    t = _collect(session, [v1, v2], got)
    engine.wait_submitted(2)
    died = result_of(v1, ("compile", Status.FAILED))
    died.rungs[0].error = ErrorInfo("ActorDied", "died twice")
    engine.finish("vector_add/v1", died, broken="ray actor 0 died twice under it")
    engine.cancel("vector_add/v2", "cancelled")
    t0 = time.monotonic()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - t0 < 5  # the batch ends at the cancel, not at its timeout
    assert [k.key for k, _ in got] == ["vector_add/v1"]
    assert session.store.load("vector_add", "v1") is None  # says nothing about the kernel: never its verdict
    assert any(isinstance(e, LadderFinished) and e.key == "vector_add/v1" for e in events)  # the screen says why
    rerun = session.scheduler.submit(v1, why="save")  # and a save of that content runs again
    engine.wait_submitted(3)
    engine.finish("vector_add/v1", result_of(v1, *OK))
    assert rerun.result(10).ok


def test_the_cancel_key_reaches_the_engine_run_the_scheduler_waits_on(engine_session):
    ws, engine, session, events = engine_session
    v1 = ws.versions("vector_add")[0]
    ticket = session.submit(v1)
    engine.wait_submitted(1)
    assert session.cancel("cancelled with the x key") == "vector_add/v1"
    assert engine.cancelled == [("vector_add/v1", "cancelled with the x key")]
    with pytest.raises(Exception):  # noqa: B017 (CancelledError: no verdict)
        ticket.result(10)
    notes = [e.message for e in events if isinstance(e, Notice)]
    assert any("run cancelled with the x key (no verdict" in n and "fake vector_add/v1" in n for n in notes), notes


def test_rank_puts_correct_versions_first_by_speedup_then_the_failed_by_how_far_they_got(make_ws):
    ws = make_ws(["vector_add"])
    v1, v2, v3 = ws.versions("vector_add")
    fast_wrong = result_of(v1, ("compile", Status.OK), ("run", Status.OK), ("correctness", Status.FAILED))
    slow = result_of(v2, *OK, speedup=1.2)
    fast = result_of(v3, *OK, speedup=2.5)
    broke = result_of(v1, ("compile", Status.FAILED))
    assert report.rank([broke, fast_wrong, slow, fast]) == [fast, slow, fast_wrong, broke]
    text = report.for_model_ranked([broke, slow, fast])
    head = text.splitlines()
    assert head[0] == "3 versions verified together, ranked (correct versions first, by worst-spec speedup):"
    assert head[1] == "1. vector_add/v3  ✓ 2.50x  (ran on node7 CPU actor 1)"
    assert head[2].startswith("2. vector_add/v2  ✓ 1.20x") and head[3].startswith("3. vector_add/v1  ✗ compile")
    assert text.index("Ladder results for vector_add/v3") < text.index("Ladder results for vector_add/v2")
    assert report.for_model_ranked([slow]) == report.for_model(slow)  # one version: as before


def test_placement_label_names_the_host_the_gpu_and_its_uuid():
    dev = {"type": "cuda", "uuid": "GPU-8f3c1a2b-1111-2222", "placement": {"host": "h9", "gpu_ids": ["5"], "actor": 5}}
    assert placement_label(dev) == "h9 GPU 5 GPU-8f3c1a2b"
    assert placement_label({"type": "cpu", "placement": {"host": "h9", "gpu_ids": [], "actor": 1}}) == "h9 CPU actor 1"
    assert placement_label({"type": "cuda", "name": "NVIDIA H200"}) == ""  # the local pool


def test_the_agent_gets_a_batch_of_variants_together_and_ranked(make_ws):
    from .scripted_llm import Call, Reply, ScriptedLLM
    from .test_agent import V2, make_agent

    ws = make_ws(["vector_add"])
    script = [
        Reply(
            "Three tilings.",
            tool_calls=[
                Call("write_kernel", {"problem": "vector_add", "source": V2 + f"\n# tiling {i}\n"}) for i in range(3)
            ],
        ),
        Reply("Written."),
        Reply("v5 wins."),
    ]
    batches: list[list[str]] = []

    def run_many(kernels):
        batches.append([k.key for k in kernels])
        speed = {"vector_add/v4": 1.1, "vector_add/v5": 3.0, "vector_add/v6": None}
        for k in reversed(kernels):  # they finish in another order than written
            s = speed[k.key]
            yield k, result_of(k, *OK, speedup=s) if s else result_of(k, ("compile", Status.FAILED))

    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm)
        agent._run_all = run_many  # what Session.results_for is in the TUI and `ktui agent`
        agent.send("try three tilings", "vector_add")
    assert batches == [["vector_add/v4", "vector_add/v5", "vector_add/v6"]]  # one batch, all at once
    message = llm.requests[2]["messages"][-1]["content"]
    assert message.startswith("3 versions verified together, ranked")
    lines = message.splitlines()
    assert lines[1].startswith("1. vector_add/v5  ✓ 3.00x") and lines[2].startswith("2. vector_add/v4  ✓ 1.10x")
    assert lines[3].startswith("3. vector_add/v6  ✗ compile")


def test_the_ray_engine_without_ray_is_an_environment_error_naming_the_extra(make_ws, monkeypatch):
    ws = make_ws(["vector_add"])
    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(EngineError, match=r"pip install -e '\.\[ray\]'"):
        make_engine("ray", ws, "cpu", LadderOptions())
    assert make_engine("local", ws, "cpu", LadderOptions()) is None  # the local pool serves
    with pytest.raises(ValueError, match="--address and --actors go with --engine ray"):
        make_engine("local", ws, "cpu", LadderOptions(), address="auto")
    with pytest.raises(ValueError, match="--actors must be 1 or more"):
        make_engine("ray", ws, "cpu", LadderOptions(), actors=0)


def test_ktui_eval_engine_ray_without_ray_exits_3_and_a_local_address_is_a_usage_error(make_ws, tmp_path):
    ws = make_ws(["vector_add"])
    blocker = tmp_path / "noray"
    (blocker / "ray").mkdir(parents=True)
    (blocker / "ray" / "__init__.py").write_text("raise ImportError('No module named ray (blocked by the test)')\n")
    env = {"PYTHONPATH": f"{blocker}:{ROOT}"}

    def ktui(*args):
        import os

        return subprocess.run(
            [sys.executable, "-m", "ktui", *args],
            cwd=ws.root,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )

    r = ktui("eval", "--engine", "ray", "--device", "cpu", "--rerun")
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"ktui: error: {RAY_MISSING}"
    from .test_importers import _store_verdict

    _store_verdict(ws, "v1", "ok")  # v1's result is stored and fresh: this eval has nothing to run
    assert ktui("eval", "--device", "cpu").returncode == 0  # the local pool: the stored table, exit 0
    r = ktui("eval", "--engine", "ray", "--device", "cpu")
    assert (r.returncode, r.stdout) == (3, ""), r.stdout  # checked up front: no table, the same message
    assert r.stderr.strip().splitlines()[-1] == f"ktui: error: {RAY_MISSING}"
    r = ktui("eval", "--address", "auto", "--device", "cpu")
    assert r.returncode == 2 and "--address and --actors go with --engine ray" in r.stderr, r.stderr


def test_rays_own_log_lines_go_to_the_workspaces_log_not_to_ktuis_output(make_ws, capfd):
    """Ray's driver logger prints ``WARNING authentication_token_setup.py:85 -- Token authentication is enabled``
    on stderr at ``ray.init``; the Ray engine routes the ``ray`` logger to ``.ktui/logs/ray.log`` instead."""
    import logging

    import ray  # noqa: F401  (installs Ray's stderr handler on the "ray" logger)

    from ktui.core.engines.ray_ladders import route_ray_logs

    logger = logging.getLogger("ray")
    saved = (list(logger.handlers), logger.propagate)
    assert any(isinstance(h, logging.StreamHandler) for h in logger.handlers)
    ws = make_ws(["vector_add"])
    try:
        path = route_ray_logs(ws)
        route_ray_logs(ws)  # twice: one file handler
        logging.getLogger("ray._private.authentication.authentication_token_setup").warning(
            "Token authentication is enabled for this Ray cluster."
        )
        out, err = capfd.readouterr()
        assert "Token authentication" not in out + err
        assert path == ws.root / ".ktui/logs/ray.log"
        assert path.read_text().count("WARNING test_engines.py:") == 1
        assert "-- Token authentication is enabled for this Ray cluster." in path.read_text()
    finally:
        for h in logger.handlers:
            if h not in saved[0]:
                h.close()
        logger.handlers[:], logger.propagate = saved
