"""Time limits per rung (``ktui.core.timeouts``): ``--timeout``, ``ktui.toml`` ``[ladder]``, and the defaults
derived from what the rungs took before: limit = max(FLOOR_S[key], FACTOR x the longest of the same rung's seconds
in the problem's previous results and the reference's seconds), so a hang is reported in seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from ktui.core.ladder import LadderOptions
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.core.store import ResultStore
from ktui.core.timeouts import (
    FACTOR,
    FIRST_RUN_S,
    FLOOR_S,
    LIMIT_KEYS,
    DefaultLimits,
    Limit,
    ReferenceTimes,
    TimeoutConfigError,
    TimeoutPolicy,
    load_policy,
    parse_timeout_arg,
)
from ktui.core.workspace import KernelRef

from .conftest import BAD, ROOT


def _stored(ws, version: str, device: str = "cpu", started: float = 1.0, **seconds: float) -> None:
    """Store a result of ``vector_add/<version>`` whose rungs took ``seconds`` (a name ending in ``_failed`` stores
    that rung as failed)."""
    rungs = []
    for name, secs in seconds.items():
        failed = name.endswith("_failed")
        rungs.append(
            RungResult(
                name.removesuffix("_failed"),
                Status.FAILED if failed else Status.OK,
                seconds=secs,
                error=ErrorInfo("WorkerTimeout", "timed out") if failed else None,
            )
        )
    res = LadderResult("vector_add", version, f"kernels/vector_add/{version}.py", {"type": device}, rungs)
    res.started_at = started
    ResultStore(ws).save(res)


def _k(ws, version: str) -> KernelRef:
    return KernelRef("vector_add", version, ws.root)


# -- --timeout and ktui.toml -------------------------------------------------------------------------------------
def test_timeout_flag_sets_every_limit_or_some():
    assert parse_timeout_arg("30") == dict.fromkeys(LIMIT_KEYS, 30.0)
    assert parse_timeout_arg("compile=20, run=90.5") == {"compile": 20.0, "run": 90.5}


@pytest.mark.parametrize(
    "text, message",
    [
        ("soon", "--timeout: 'soon' is not a number of seconds"),
        ("-5", "--timeout: a limit is a positive number of seconds, not '-5'"),
        ("compile=0", "--timeout compile: a limit is a positive number of seconds, not '0'"),
        ("compiel=20", "--timeout: unknown rung 'compiel' (limits: compile, run, correctness, benchmark)"),
        ("dumps=20", "--timeout: the dumps rung has no limit of its own: it uses compile's"),
    ],
)
def test_a_bad_timeout_flag_says_what_is_wrong(text, message):
    with pytest.raises(TimeoutConfigError) as exc:
        parse_timeout_arg(text)
    assert message in str(exc.value)


def test_ktui_toml_sets_limits_per_rung_and_the_flag_wins(make_ws):
    ws = make_ws(["vector_add"])
    (ws.root / "ktui.toml").write_text("[ladder]\ntimeout_factor = 3\n\n[ladder.timeouts]\ncompile = 12\nrun = 45\n")
    policy = load_policy(ws.root, parse_timeout_arg("run=7"))
    assert policy.factor == 3.0
    limits = policy.limits(ws, _k(ws, "v1"), "cpu")
    assert limits["compile"] == 12.0 and limits["compile"].why == "set in ktui.toml [ladder.timeouts]"
    assert limits["run"] == 7.0 and limits["run"].why == "set by --timeout"
    # the others are derived: nothing ran here, so the first-run defaults
    assert limits["correctness"] == FIRST_RUN_S["correctness"] and limits["benchmark"] == FIRST_RUN_S["benchmark"]


def test_pyproject_ladder_section_is_read_when_there_is_no_ktui_toml(make_ws):
    ws = make_ws(["vector_add"])
    (ws.root / "pyproject.toml").write_text("[tool.ktui.ladder.timeouts]\ncorrectness = 99\n")
    limits = load_policy(ws.root).limits(ws, _k(ws, "v1"), "cpu")
    assert limits["correctness"] == 99.0 and "pyproject.toml [tool.ktui.ladder.timeouts]" in limits["correctness"].why


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[ladder.timeouts]\ncompile = 'fast'\n", "ktui.toml [ladder.timeouts] compile: 'fast' is not a number"),
        ("[ladder.timeouts]\nprofile = 10\n", "the profile rung has no limit of its own: it uses benchmark's"),
        ("[ladder]\ntimeouts = 30\n", "ktui.toml [ladder]: timeouts must be a table of rung = seconds"),
        ("[ladder]\ntimeout_factor = 0.5\n", "timeout_factor must be 1 or more"),
        ("[ladder\n", "ktui.toml"),
    ],
)
def test_a_bad_ladder_section_names_the_file_and_field(make_ws, toml, message):
    ws = make_ws(["vector_add"])
    (ws.root / "ktui.toml").write_text(toml)
    with pytest.raises(TimeoutConfigError) as exc:
        load_policy(ws.root)
    assert message in str(exc.value)


# -- derived limits ----------------------------------------------------------------------------------------------
def test_limits_scale_with_the_previous_versions_rungs_with_a_floor(make_ws):
    ws = make_ws(["vector_add"])
    _stored(ws, "v1", started=1.0, compile=1.5, run=40.0, correctness=2.0, benchmark=0.0, dumps=3.0)
    _stored(ws, "v3", device="cuda", started=9.0, compile=100.0, run=100.0)  # another device: not this one's work
    limits = TimeoutPolicy().limits(ws, _k(ws, "v2"), "cpu")
    assert limits["compile"] == FLOOR_S["compile"]  # 5 x 3.0 s (dumps uses compile's limit) is under the floor
    assert "the floor" in limits["compile"].why and "the dumps rung of vector_add/v1" in limits["compile"].why
    assert limits["run"] == pytest.approx(FACTOR * 40.0)
    assert limits["run"].why.startswith("derived: 5 x 40.00 s, the run rung of vector_add/v1; set it with --timeout")
    assert limits["correctness"] == FLOOR_S["correctness"]
    assert limits["benchmark"] == FIRST_RUN_S["benchmark"]  # skipped on the CPU (0 s): nothing to scale
    assert FLOOR_S["compile"] < FIRST_RUN_S["compile"] / 4  # a hang in compile: seconds, not minutes


def test_the_versions_own_last_run_and_the_newest_other_one_count_failed_rungs_do_not(make_ws):
    ws = make_ws(["vector_add"])
    _stored(ws, "v1", started=1.0, run=90.0)  # older than v3: not the previous version
    _stored(ws, "v3", started=5.0, run=12.0)
    _stored(ws, "v2", started=3.0, run=8.0, correctness_failed=300.0)  # v2's own previous run
    limits = TimeoutPolicy().limits(ws, _k(ws, "v2"), "cpu")
    assert limits["run"] == pytest.approx(FACTOR * 12.0) and "vector_add/v3" in limits["run"].why
    assert limits["correctness"] == FIRST_RUN_S["correctness"]  # its only record timed out: not a measure


def test_the_run_limit_scales_the_longest_step_and_keeps_the_whole_rungs_bound_in_all(make_ws):
    """New-user trial 20 (M4): a hang in a 1x1 case was called one after 134 s, 5 x the previous version's 26.86 s
    run rung, whose cases took 0.3 s. The limit is on time without progress: it scales the longest step the
    previous run recorded (``longest_step_s``), with its floor; the call in all keeps the bound the whole rung gave
    (``Limit.total``), and a version whose dry call compiled long gets 5 x that (a case may JIT as long)."""
    from ktui.core.timeouts import at_least_compiles
    from ktui.core.workers.client import IDLE_STEPS_CAP

    ws = make_ws(["vector_add"])
    _stored(ws, "v1", started=1.0, run=26.86)
    res = ResultStore(ws).load("vector_add", "v1")
    res.rungs[0].figures["longest_step_s"] = 0.31
    ResultStore(ws).save(res)
    lim = TimeoutPolicy().limits(ws, _k(ws, "v2"), "cpu")["run"]
    assert lim == FLOOR_S["run"], lim  # 5 x 0.31 s is under the floor
    assert "5 x 0.31 s, the longest step (a case) of the run rung of vector_add/v1, is less" in lim.why, lim.why
    assert lim.total == pytest.approx(IDLE_STEPS_CAP * FACTOR * 26.86)
    res.rungs[0].figures["longest_step_s"] = 8.0
    ResultStore(ws).save(res)
    lim = TimeoutPolicy().limits(ws, _k(ws, "v2"), "cpu")["run"]
    assert lim == pytest.approx(40.0) and lim.why.startswith("derived: 5 x 8.00 s, the longest step"), lim.why
    assert at_least_compiles(lim, 2.0) is lim  # 5 x 2 s is under it
    raised = at_least_compiles(lim, 12.0)
    assert raised == pytest.approx(60.0) and "5 x 12.00 s, this version's compile in its dry call" in raised.why
    assert raised.total >= lim.total
    fixed = Limit(3.0, "set by --timeout")
    assert at_least_compiles(fixed, 12.0) is fixed  # a limit the user set is theirs
    old = make_ws(["vector_add"])
    _stored(old, "v3", started=5.0, run=40.0)  # stored before the figure existed: the whole rung, as before
    lim = TimeoutPolicy().limits(old, _k(old, "v4"), "cpu")["run"]
    assert lim == pytest.approx(FACTOR * 40.0) and not lim.total


def test_the_step_timer_measures_the_longest_time_without_a_finished_step():
    from ktui.core.ladder.rungs.run import StepTimer

    now = [0.0]
    seen: list[dict] = []
    timer = StepTimer(clock=lambda: now[0])
    tick = timer.wrap(seen.append)
    with timer.call():
        now[0] = 1.0
        tick({"done": 0, "total": 2, "case": "a"})  # a case begins: not a finished step
        now[0] = 2.5
        tick({"done": 1, "total": 2})  # 2.5 s since the call began
        now[0] = 3.0
        tick({"done": 1, "total": 2, "case": "b"})
        now[0] = 3.5
        tick({"done": 2, "total": 2})
        now[0] = 7.5  # the reply, 4 s after the last finished step
    assert timer.longest == pytest.approx(4.0) and len(seen) == 4


def test_the_references_seconds_raise_a_limit(make_ws):
    ws = make_ws(["vector_add"])
    _stored(ws, "v1", run=2.0, correctness=1.0)
    times = ReferenceTimes(ws)
    assert times.record("cpu", "vector_add", [("describe", 0.1), ("prepare", 30.0), ("compare", 4.0)]) == {
        "compile": 0.1,
        "run": 30.0,
        "correctness": 30.0,
    }
    assert times.get("cpu", "vector_add")["run"] == 30.0 and times.get("cuda", "vector_add") == {}
    limits = TimeoutPolicy().limits(ws, _k(ws, "v2"), "cpu")
    assert limits["run"] == pytest.approx(FACTOR * 30.0)
    assert "the reference's prepare of this problem" in limits["run"].why
    assert limits["correctness"] == pytest.approx(FACTOR * 30.0)


def test_a_new_problem_gets_the_first_run_limits_not_another_problems(make_ws):
    """A problem never run here gets FIRST_RUN_S, whatever the others took (a CPU matmul's 162 s run made a new
    elementwise problem's run limit 810 s); once its own v1 ran, its versions' limits scale with that run."""
    ws = make_ws(["vector_add", "softmax"])
    _stored(ws, "v1", compile=9.0, run=162.0, correctness=80.0)  # vector_add: a slow problem
    ReferenceTimes(ws).record("cpu", "vector_add", [("prepare", 150.0)])
    limits = TimeoutPolicy().limits(ws, KernelRef("softmax", "v1", ws.root), "cpu")
    assert dict(limits) == FIRST_RUN_S
    assert limits["run"].why.startswith("ktui's default for a first run of softmax on this device; set it with")
    assert "vector_add" not in limits["run"].why
    res = LadderResult("softmax", "v1", "kernels/softmax/v1.py", {"type": "cpu"}, [RungResult("run", Status.OK, 4.0)])
    ResultStore(ws).save(res)
    limits = TimeoutPolicy().limits(ws, KernelRef("softmax", "v2", ws.root), "cpu")
    assert limits["run"] == FLOOR_S["run"] and "the run rung of softmax/v1" in limits["run"].why  # 5 x 4 s < 30 s
    assert limits["compile"] == FIRST_RUN_S["compile"]  # softmax never compiled here: still its first


def test_the_callers_options_fix_every_limit_and_the_default_options_are_marked_unset():
    assert isinstance(LadderOptions().timeouts, DefaultLimits) and LadderOptions().timeouts == FIRST_RUN_S
    assert not isinstance(LadderOptions(timeouts={"compile": 5.0}).timeouts, DefaultLimits)


def test_a_session_derives_its_limits_and_keeps_the_callers(make_ws, session_for):
    ws = make_ws(["vector_add"])
    _stored(ws, "v1", compile=2.0, run=50.0)
    derived = session_for(ws).limits_for(_k(ws, "v1"))
    assert derived["compile"] == FLOOR_S["compile"] and derived["run"] == pytest.approx(FACTOR * 50.0)
    fixed = session_for(ws, timeouts={"compile": 7.0, "run": 8.0, "correctness": 9.0, "benchmark": 10.0})
    got = fixed.limits_for(_k(ws, "v1"))
    assert dict(got) == {"compile": 7.0, "run": 8.0, "correctness": 9.0, "benchmark": 10.0}
    assert got["compile"].why == "set by the caller's LadderOptions"


def test_a_limit_keeps_where_it_came_from_through_copies():
    import copy

    lim = Limit(30.0, "the floor", total=600.0)
    assert copy.deepcopy(lim).why == "the floor" and copy.deepcopy({"compile": lim})["compile"] == 30.0
    assert copy.deepcopy(lim).total == 600.0
    assert f"{lim:g}" == "30"


# -- end to end --------------------------------------------------------------------------------------------------
def test_a_session_records_the_references_seconds_and_a_hang_fails_at_the_toml_limit(make_ws, cpu_pool):
    """ktui.toml's compile limit reaches the worker calls of a session's run: the hanging dry call is killed after
    20 s and the message says where the limit came from; the judge's describe of that run is recorded."""
    from ktui.core.session import Session

    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "hangs.py"})
    # 20 s: the judge's describe of the same run has that limit too, and took over 3 s, then over 8 s, at load 9-12
    # on 2 cores
    (ws.root / "ktui.toml").write_text("[ladder.timeouts]\ncompile = 20\n")
    session = Session(ws, "cpu", options=LadderOptions(seeds=1), watch=False, pool=cpu_pool)
    session.start()
    try:
        for w in cpu_pool.workers:
            w.ensure_ready()
        t0 = time.monotonic()
        res = session.run(_k(ws, "v1"), timeout_s=120)
        took = time.monotonic() - t0
    finally:
        session.stop()
    failed = res.failed_rung
    assert failed is not None and failed.name == "compile" and failed.error.type == "WorkerTimeout"
    assert "timed out after 20 s" in failed.error.message
    assert "the limit: set in ktui.toml [ladder.timeouts]" in failed.error.message
    assert took < 60, took  # 20 s, plus the compiler's restart
    assert "compiler worker" in failed.error.message, failed.error.message  # the hang, not the judge's describe
    assert "compile" in ReferenceTimes(ws).get("cpu", "vector_add")  # the judge's describe of the run


def test_a_reference_that_hangs_is_named_as_the_suspect_not_the_kernel(make_ws, ladder_for):
    """The judge runs the reference, never the kernel: its timeout says the reference may hang (it said "the kernel
    may hang" for a describe slowed past a 3 s limit by load)."""
    ws = make_ws(["vector_add"], {"vector_add/v2": ROOT / "kernels/vector_add/v2.py"})
    ref = ws.root / "references" / "vector_add.py"
    head = "def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:"
    assert head in ref.read_text()
    ref.write_text(ref.read_text().replace(head, head + "\n    while True:\n        pass"))
    limits = {"compile": 10.0, "run": 60.0, "correctness": 10.0, "benchmark": 60.0}  # describe runs it too
    res = ladder_for(ws, seeds=1, distributions=False, layouts=False, timeouts=limits).run(_k(ws, "v2"))
    failed = res.failed_rung
    assert failed is not None and failed.error is not None, [r.line() for r in res.rungs]
    message = failed.error.message
    assert "the reference may hang, or be slow: the kernel is not the cause" in message, message
    assert "the kernel may hang" not in message and "the judge worker was restarted" in message, message


def test_ktui_run_reports_a_hang_in_seconds_with_the_timeout_flag(make_ws):
    """``ktui run --timeout compile=4`` on a ``while True`` kernel: the compile rung fails after 4 s, the message
    names ``--timeout``, and the progress line shows the rung's elapsed time and limit."""
    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "hangs.py"})
    exe = shutil.which("ktui") or str(ROOT / ".venv/bin/ktui")
    t0 = time.monotonic()
    p = subprocess.run(
        [exe, "run", str(ws.root / "kernels/vector_add/v1.py"), "--device", "cpu", "--timeout", "compile=4"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KTUI_FORCE_CPU": "1"},
    )
    assert p.returncode == 1, p.stderr
    assert "[compile] FAILED WorkerTimeout: timed out after 4 s" in p.stdout
    assert "the limit: set by --timeout" in p.stdout
    assert time.monotonic() - t0 < 120
    bad = subprocess.run(
        [exe, "run", str(ws.root / "kernels/vector_add/v1.py"), "--timeout", "dumps=3"],
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "the dumps rung has no limit of its own" in bad.stderr


def test_ktui_run_json_prints_its_progress_on_stderr_and_only_the_envelope_on_stdout(make_ws):
    """``ktui run --json`` on a hanging kernel: stdout is the one envelope (the failed compile rung), stderr has the
    same lines as the plain run: the header, ``[compile] running 5 s (limit 8 s without progress)`` while it runs,
    the rung's line."""
    from .jsonout import data_of

    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "hangs.py"})
    exe = shutil.which("ktui") or str(ROOT / ".venv/bin/ktui")
    p = subprocess.run(
        [exe, "run", str(ws.root / "kernels/vector_add/v1.py"), "--device", "cpu", "--timeout", "compile=8", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KTUI_FORCE_CPU": "1"},
    )
    assert p.returncode == 1, p.stderr
    data = data_of(p.stdout, "run", exit_code=1)  # the whole of stdout is one envelope
    assert [(r["name"], r["status"]) for r in data["rungs"]] == [("compile", "FAILED")]
    err = p.stderr.splitlines()
    assert "vector_add/v1  device: cpu (interpreter)" in err, err
    assert "[compile] running 5 s (limit 8 s without progress, 80 s in all)" in err, err
    assert any(line.startswith("[compile] FAILED WorkerTimeout: timed out after 8 s") for line in err), err


def test_limits_are_printed_in_whole_seconds_from_ten_up():
    from ktui.cli import RunningRung
    from ktui.core.results import fmt_seconds

    line = RunningRung(sys.stdout, lambda rung: {"run": Limit(141.534, "derived")}.get(rung))
    assert line.line("run", 5.2) == "[run] running 5 s (limit 142 s without progress, 1415 s in all)"
    assert [fmt_seconds(x) for x in (809.981, 30.0, 9.96, 4.0, 2.5, 0.25)] == ["810", "30", "10", "4", "2.5", "0.2"]


def test_the_running_rung_line_shows_elapsed_seconds_and_the_limit():
    import io

    from ktui.cli import RunningRung
    from ktui.core.events import RungProgress, RungStarted

    out = io.StringIO()
    line = RunningRung(out, lambda rung: {"compile": 30.0}.get(rung))
    assert line.notes is sys.stderr  # not a terminal: notes leave stdout to the rung lines a script reads
    line.notes = out
    line.FIRST_NOTE_S, line.NOTE_EVERY_S, line.TICK_S = 0.2, 0.5, 0.05
    line.on_event(RungStarted(key="vector_add/v1", run_id=1, rung="compile"))
    line.start()
    time.sleep(0.9)
    line.close()
    notes = out.getvalue().splitlines()
    assert notes and all(
        n.startswith("[compile] running ") and n.endswith(" s (limit 30 s without progress, 300 s in all)")
        for n in notes
    )
    assert 2 <= len(notes) <= 3  # after 0.2 s, then every 0.5 s (not a terminal: no rewritten line)
    assert line.line("dumps", 4.4) == "[dumps] running 4 s"  # no limit known: none shown
    # once the worker reports progress, the line says how far and how long since (the limit runs from there)
    line.on_event(RungStarted(key="vector_add/v1", run_id=1, rung="run"))
    line.on_event(RungProgress(key="vector_add/v1", run_id=1, rung="run", done=40, total=111))
    text = line.line("run", 111.2)
    assert text.startswith("[run] running 111 s, 40 of 111 done, the last ") and text.endswith(" s ago"), text
    line.on_event(RungProgress(key="vector_add/v1", run_id=1, rung="compile", done=1, total=2))  # not this rung's
    assert ", 40 of 111 done" in line.line("run", 112)


def test_the_limit_is_on_time_without_progress_so_a_slow_steady_run_is_not_a_hang(make_ws, ladder_for):
    """The run rung's limit of 3 s is far below the run's total (0.4 s per call, a dozen cases and more), but each
    finished case starts the limit again: the rung passes. A hang within a case still fails at the limit
    (test_ktui_run_reports_a_hang_in_seconds_with_the_timeout_flag)."""
    from .test_cases import K

    ws = make_ws(["vector_add"], {"vector_add/v1": K / "slow_steady.py"})
    limits = {"compile": 60.0, "run": 3.0, "correctness": 120.0, "benchmark": 120.0}
    # (no fuzzed sizes: a drawn spec of a million elements took over 3 s to generate and write at load 9)
    opts = dict(
        seeds=1, distributions=False, layouts=False, repeat=False, near_duplicates=False, fuzz=False, timeouts=limits
    )
    res = ladder_for(ws, **opts).run(_k(ws, "v1"))
    run = res.rung("run")
    assert run.status is Status.OK, run.line()
    assert run.figures["total_s"] > 3 * 3.0, run.figures["total_s"]  # well past one limit in all
    # its longest step (a case of 0.4 s and its writing; the end of the call after the last) is what a later run's
    # limit scales: well under the rung's seconds, and at least one call's sleep
    assert 0.4 <= run.figures["longest_step_s"] < run.seconds / 3, (run.figures["longest_step_s"], run.seconds)


def test_a_step_of_the_run_rung_with_its_own_progress_is_named_in_the_running_line():
    """After the calls, the run rung compiles each distinct launch: the line names that step and counts launches,
    instead of the calls' '170 of 170 done, the last 42 s ago' that read as a hang."""
    import io

    from ktui.cli import RunningRung
    from ktui.core.events import RungProgress, RungStarted

    line = RunningRung(io.StringIO(), lambda rung: {"run": 120.0}.get(rung))
    line.on_event(RungStarted(key="k/v1", run_id=1, rung="run"))
    line.on_event(RungProgress(key="k/v1", run_id=1, rung="run", done=170, total=170))
    assert ", 170 of 170 done, the last 0 s ago (limit 120 s without progress, 1200 s in all)" in line.line("run", 66.0)
    detail = "compiling the distinct launches for sm_90a"
    line.on_event(RungProgress(key="k/v1", run_id=1, rung="run", done=3, total=37, detail=detail))
    assert line.line("run", 80.0) == (
        "[run] running 80 s, compiling the distinct launches for sm_90a: 3 of 37 done, the last 0 s ago "
        "(limit 120 s without progress, 1200 s in all)"
    )
    # a step with a limit of its own says that one (new-user trial 22 F4 read "limit 30 s" while 120 s ran)
    line.on_event(RungProgress(key="k/v1", run_id=1, rung="run", done=4, total=37, detail=detail, limit_s=300.0))
    assert line.line("run", 81.0).endswith(
        "4 of 37 done, the last 0 s ago (limit 300 s without progress, 3000 s in all)"
    )


def test_the_run_rung_reports_its_launch_compiles_as_progress(make_ws, ladder_for):
    """The compiler's per-launch progress reaches the bus as the run rung's, with the step named."""
    from ktui.core.events import RungProgress

    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    lad = ladder_for(ws, seeds=1, distributions=False, layouts=False, rungs=("compile", "run"))
    seen: list[RungProgress] = []
    lad.bus.subscribe(lambda ev: seen.append(ev) if isinstance(ev, RungProgress) else None)
    assert lad.run(k).ok
    steps = [ev for ev in seen if ev.rung == "run" and ev.detail.startswith("compiling the distinct launches")]
    assert steps and steps[-1].done == steps[-1].total >= 1, [(e.detail, e.done, e.total) for e in seen]


def test_the_run_rungs_launch_compiles_get_a_floor_when_the_compile_limit_is_derived():
    """New-user trial 19: a fuzzed spec's BLOCK=65536 launch took over 30 s to compile on a loaded machine, against
    5 x the dry call's compile; a derived limit is raised to ``LAUNCH_COMPILE_FLOOR_S``, a set one is kept."""
    from ktui.core.timeouts import LAUNCH_COMPILE_FLOOR_S, Limit, launch_compile_limit

    derived = Limit(30.0, "the floor of a derived limit (5 x 5.81 s, the dumps rung of dequant8/v2, is less); set")
    raised = launch_compile_limit(derived)
    assert raised == LAUNCH_COMPILE_FLOOR_S == 120.0 and "the floor of the launch compiles" in raised.why
    assert "5 x 5.81 s" in raised.why and "--timeout compile=" in raised.why
    assert launch_compile_limit(Limit(400.0, "derived: 5 x 80.00 s, the compile rung of x/v1")) == 400.0
    fixed = Limit(20.0, "set by --timeout")
    assert launch_compile_limit(fixed) is fixed and launch_compile_limit(7.0) == 7.0


def test_a_run_still_finishing_cases_at_its_cap_in_all_is_called_slow_not_hung(make_ws, ladder_for):
    """New-user trial 22 F1: an honest kernel finishing a case every few seconds under the interpreter met the cap on
    the call's whole time (10 x the limit without progress) after 20 minutes and was told "the kernel may hang". A
    call still finishing steps at its cap says it is slow, how long since its last step, and what finishes it."""
    from .test_cases import K

    ws = make_ws(["vector_add"], {"vector_add/v1": K / "slow_steady.py"})
    limits = {"compile": 60.0, "run": 2.0, "correctness": 120.0, "benchmark": 120.0}  # in all: 20 s
    opts = dict(seeds=2, layouts=False, repeat=False, near_duplicates=False, fuzz=False, timeouts=limits)
    run = ladder_for(ws, **opts).run(_k(ws, "v1")).rung("run")
    assert run.status is Status.FAILED and run.error is not None, run.line()
    message = run.error.message
    assert "timed out after" in message and "s in all (10 times the limit of 2 s)" in message, message
    assert "slow, not hung: it was still finishing steps, the last" in message, message
    assert "the kernel may hang" not in message, message


def test_an_edit_of_ktui_toml_applies_to_the_next_run_of_a_running_session(make_ws, session_for):
    """New-user trial 22, F17: ``[ladder.timeouts] compile = 600`` added to ktui.toml while the TUI was open did not
    apply until a restart. The session reads its files again when they changed, with a notice; a broken edit keeps
    the limits read before and says why."""
    from ktui.core.events import Notice

    ws = make_ws(["vector_add"])
    session = session_for(ws)
    notices: list[Notice] = []
    session.bus.subscribe(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    assert session.limits_for(_k(ws, "v1"))["compile"] == FIRST_RUN_S["compile"]
    assert notices == []
    (ws.root / "ktui.toml").write_text("[ladder.timeouts]\ncompile = 600\n")
    got = session.limits_for(_k(ws, "v1"))
    assert got["compile"] == 600.0 and got["compile"].why == "set in ktui.toml [ladder.timeouts]"
    assert [(n.level, n.message) for n in notices] == [
        ("info", "ktui.toml or pyproject.toml changed: their [ladder] time limits apply from this run on")
    ]
    (ws.root / "ktui.toml").write_text("[ladder.timeouts]\ncompile = -1\n")
    assert session.limits_for(_k(ws, "v1"))["compile"] == 600.0
    assert notices[-1].level == "warning" and notices[-1].message.endswith("; the time limits read before stay")
    session.limits_for(_k(ws, "v1"))
    assert len(notices) == 2  # said once per edit


# a fake worker's protocol: hello, then one request a line (the scripts below go on inside the loop)
WORKER_HEAD = r"""
import json, sys, time
out = sys.stdout.buffer
def send(m):
    out.write((json.dumps(m) + "\n").encode()); out.flush()
send({"hello": {"role": "candidate", "device": {"type": "cpu"}, "startup_s": 0.0, "pid": 0, "python": "3"}})
for line in sys.stdin.buffer:
    req = json.loads(line)
"""

FAKE_WORKER = (
    WORKER_HEAD
    + r"""    beats = float(req["params"]["beats_s"])
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0:  # one long case: no step finishes
        time.sleep(0.25)
        if time.monotonic() - t0 < beats:
            send({"id": req["id"], "heartbeat": True})
    send({"id": req["id"], "result": {"slept": True}})
"""
)


def test_heartbeats_of_a_long_case_are_progress_and_their_end_is_a_hang(tmp_path):
    """New-user trial 23, F6/F19: a fuzzed case ran its programs in the interpreter for longer than the run rung's
    limit (30 s, derived) and an honest kernel was restarted as "may hang". The interpreter's finished programs send
    heartbeats (``ktui.worker.heartbeat``) that the client takes as progress; a case whose heartbeats stop is a hang
    as before."""
    import sys

    from ktui.core.workers.client import WorkerProcess, WorkerTimeout
    from ktui.core.workers.transport import LocalTransport

    class Fake(LocalTransport):
        def command(self, role: str, device: str) -> list[str]:
            return [sys.executable, "-c", FAKE_WORKER]

    client = WorkerProcess("candidate", "cpu", tmp_path, transport=Fake())
    try:
        assert client.call("execute", {"beats_s": 3.0}, timeout_s=1.5) == {"slept": True}
        with pytest.raises(WorkerTimeout, match=r"timed out: nothing finished for 1\.5 s"):
            client.call("execute", {"beats_s": 0.5}, timeout_s=1.5)  # the programs stop finishing: a hang
    finally:
        client.stop()


def test_a_case_past_the_limit_since_the_last_one_is_said_to_still_advance():
    """New-user trial 27, F4: "the last 495 s ago (limit 300 s without progress" read as a limit not kept: the case
    under way still advanced, each interpreted program resetting the limit. The line says so past the limit."""
    import io

    from ktui.cli import RunningRung
    from ktui.core.events import RungProgress, RungStarted

    line = RunningRung(io.StringIO(), lambda rung: {"run": 300.0}.get(rung))
    line.on_event(RungStarted(key="k/v1", run_id=1, rung="run"))
    line.on_event(RungProgress(key="k/v1", run_id=1, rung="run", done=40, total=111))
    assert "still advances" not in line.line("run", 60.0)
    assert line._progress is not None
    line._progress = (*line._progress[:3], line._progress[3] - 495, *line._progress[4:])  # the last case 495 s ago
    text = line.line("run", 700.0)
    assert "the last 495 s ago (limit 300 s without progress; the case under way still advances" in text, text


def test_a_slow_fuzzed_case_gets_one_note_on_bounding_the_fuzzed_sizes():
    """New-user trial 28, F1: a GEMV's fuzzed(1539, 1665, 64) ran over 10 minutes a case under the CPU interpreter,
    and nothing said that ``fuzz = {...}`` bounds the drawn sizes. A fuzzed case under way for 60 s gets one note,
    once; a test spec's case does not."""
    import io

    from ktui.cli import RunningRung
    from ktui.core.events import RungProgress, RungStarted

    line = RunningRung(io.StringIO(), lambda rung: {"run": 300.0}.get(rung))
    line.on_event(RungStarted(key="k/v1", run_id=1, rung="run"))
    case = "spec=fuzzed(1539, 1665, 64, fp16, False) seed=7 dist=intrange"
    line.on_event(RungProgress(key="k/v1", run_id=1, rung="run", done=65, total=258, case=case))
    assert line.slow_note() == ""  # just started
    assert line._progress is not None
    line._progress = (*line._progress[:3], line._progress[3] - 61, *line._progress[4:])
    note = line.slow_note()
    assert note.startswith("note: spec=fuzzed(1539, 1665, 64, fp16, False) has run 60 s") and "fuzz = {" in note
    assert line.slow_note() == ""  # once
    line.on_event(RungProgress(key="k/v1", run_id=1, rung="run", done=66, total=258, case="spec=(16, 65) seed=8"))
    line._progress = (*line._progress[:3], line._progress[3] - 61, *line._progress[4:])
    assert line.slow_note() == ""  # a test spec's case


STEPPING_WORKER = (
    WORKER_HEAD
    + r"""    steps = bool(req["params"]["steps"])
    while True:  # never answers: the call meets its cap on the whole time
        for _ in range(2):  # a case's programs: heartbeats
            time.sleep(0.1)
            send({"id": req["id"], "heartbeat": True})
        if steps:  # the case finished: a step
            send({"id": req["id"], "progress": {"done": 1, "total": 10**6}})
"""
)


@pytest.mark.parametrize("steps", [True, False])
def test_a_call_at_its_cap_with_heartbeats_since_its_last_step_is_slow_not_a_case_that_never_ended(tmp_path, steps):
    """CI of stop 38: under load each case of an honest, slow kernel ran its programs long enough to send
    heartbeats, and the cap on the call's whole time (10 x the limit) fell inside one: the message said "a case that
    did not finish" of a run that was finishing a case every few tenths of a second. A call that finished steps is
    slow, not hung, whatever the case under way sent since; one that only sent heartbeats is one long case."""
    import sys

    from ktui.core.workers.client import IDLE_STEPS_CAP, WorkerProcess, WorkerTimeout
    from ktui.core.workers.transport import LocalTransport

    class Fake(LocalTransport):
        def command(self, role: str, device: str) -> list[str]:
            return [sys.executable, "-c", STEPPING_WORKER]

    client = WorkerProcess("candidate", "cpu", tmp_path, transport=Fake())
    try:
        with pytest.raises(WorkerTimeout) as info:
            client.call("execute", {"steps": steps}, timeout_s=0.4)
    finally:
        client.stop()
    message = str(info.value)
    assert f"s in all ({IDLE_STEPS_CAP} times the limit of 0.4 s)" in message, message
    if steps:
        assert "slow, not hung: it was still finishing steps, the last 0 s ago" in message, message
        assert "and its kernels were running programs of the next case 0 s ago" in message, message
        assert "a case that did not finish" not in message, message
    else:
        assert "slow, not hung" not in message, message
        assert (
            "its kernels were still running programs in the interpreter, the last 0 s ago, in a case that did "
            "not finish" in message
        ), message
