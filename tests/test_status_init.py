"""Everyday commands and stale verdicts (issue 10): ``ktui init`` scaffolds a problem whose v1 passes ``ktui run`` on
the CPU; ``ktui status [--json]`` lists every version with its verdict, speedup and staleness; a mistyped subcommand
says what it might have meant; the TUI marks a result whose kernel or reference changed on disk as stale and runs
those versions at start-up (or on ``u`` with ``[tui] stale = "mark"``); a reference error marks the problem."""

from __future__ import annotations

import pytest

from ktui.core import report
from ktui.core.ladder import LadderOptions
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.core.scaffold import TAIL_SIZES
from ktui.core.session import Session
from ktui.core.status import (
    STALE_BOTH,
    STALE_KERNEL,
    STALE_REFERENCE,
    UNVERIFIED,
    stale_policy,
    staleness,
    workspace_status,
)
from ktui.core.store import ResultStore, sha256
from ktui.core.workspace import Workspace
from ktui.tui.app import KtuiApp
from ktui.tui.state import VersionState, stale_keys
from ktui.tui.widgets import KernelTree

from .conftest import ROOT
from .jsonout import data_of
from .test_cli import ktui
from .test_tui import wait_for


# -- ktui init, ktui status ----------------------------------------------------------------------------------
def test_init_scaffolds_a_problem_that_passes_its_ladder_and_status_tracks_staleness(tmp_path):
    root = tmp_path / "mine"
    root.mkdir()
    made = ktui("init", "gelu", cwd=root)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[:2] == ["created references/gelu.py", "created kernels/gelu/v1.py"]
    ref = (root / "references/gelu.py").read_text()
    assert repr(TAIL_SIZES) in ref and TAIL_SIZES == (1, 127, 129, 1023, 1025, 4099)  # 1, block +-1, a prime
    assert "def gelu_kernel(" in (root / "kernels/gelu/v1.py").read_text()

    run = ktui("run", "kernels/gelu/v1.py", "--device", "cpu", "--json", cwd=root)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr
    d = data_of(run.stdout, "run")
    assert d["ok"] and [r["status"] for r in d["rungs"]] == ["ok", "ok", "ok", "skipped", "ok"], d["rungs"]

    again = ktui("init", "gelu", cwd=root)
    assert again.returncode == 2 and "already exist: nothing written" in again.stderr, again.stderr
    bad = ktui("init", "9lives", cwd=root)
    assert bad.returncode == 2 and "must be a Python identifier" in bad.stderr, bad.stderr
    assert ktui("init", "layer_norm", cwd=root).returncode == 0  # a second problem, never run

    st = ktui("status", "--json", cwd=root)
    assert st.returncode == 0, st.stderr
    problems = {p["problem"]: p for p in data_of(st.stdout, "status")["problems"]}
    v1 = problems["gelu"]["versions"][0]
    assert (v1["key"], v1["verdict"], v1["ok"], v1["stale"], v1["speedup"]) == ("gelu/v1", "✓ ok", True, "", None)
    assert v1["device"] == "cpu (interpreter)" and problems["gelu"]["reference_error"] == ""
    assert problems["layer_norm"]["versions"][0]["verdict"] == "· not run"
    text = ktui("status", cwd=root).stdout.splitlines()
    assert text[0] == "gelu  (references/gelu.py)" and text[1].startswith("  v1   ✓ ok") and "STALE" not in text[1]
    assert text[-1] == "2 versions: 1 ok, 1 not run"

    with (root / "kernels/gelu/v1.py").open("a") as f:
        f.write("# edited while ktui was closed\n")
    v1 = data_of(ktui("status", "--json", cwd=root).stdout, "status")["problems"][0]["versions"][0]
    assert v1["stale"] == STALE_KERNEL and v1["verdict"] == "✓ ok"  # the old verdict, said to be stale
    with (root / "references/gelu.py").open("a") as f:
        f.write("# edited too\n")
    text = ktui("status", str(root)).stdout.splitlines()
    assert text[1].endswith(f"STALE: {STALE_BOTH}"), text
    assert text[-1].startswith("2 versions: 1 ok, 1 not run; 1 to run again, stale"), text


def test_a_mistyped_subcommand_says_what_it_might_have_meant(tmp_path):
    for word, meant in (("rnu", "run"), ("stauts", "status"), ("agnet", "agent"), ("dif", "diff")):
        p = ktui(word, cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip() == (
            f"ktui: error: {word!r} is neither a command nor a folder: did you mean `ktui {meant}`? "
            "(or give a workspace folder)"
        ), p.stderr
    p = ktui("xyzzy", cwd=tmp_path)
    assert p.returncode == 2 and "commands: run, agent, diff, status, init" in p.stderr, p.stderr
    (tmp_path / "rnu").mkdir()  # an existing folder is a workspace path, whatever its name
    p = ktui("rnu", cwd=tmp_path)
    assert p.returncode == 2 and "is not a ktui workspace" in p.stderr, p.stderr


def test_staleness_compares_both_hashes_with_the_files(make_ws):
    ws = make_ws(["vector_add"])
    k = ws.versions("vector_add")[0]
    r = _result(ws, "v1")
    assert staleness(ws, k, r) == "" and staleness(ws, k, None) == ""
    r.source_sha256 = "0" * 64
    assert staleness(ws, k, r) == STALE_KERNEL
    r.reference_sha256 = "0" * 64
    assert staleness(ws, k, r) == STALE_BOTH
    r.source_sha256 = sha256(k.path.read_bytes())
    assert staleness(ws, k, r) == STALE_REFERENCE
    assert stale_policy(ws.root) == ("run", "")
    (ws.root / "ktui.toml").write_text('[tui]\nstale = "mark"\n')
    assert stale_policy(ws.root) == ("mark", "")
    (ws.root / "ktui.toml").write_text('[tui]\nstale = "later"\n')
    policy, warning = stale_policy(ws.root)
    assert policy == "run" and 'stale must be "run" or "mark"' in warning


# -- the TUI -------------------------------------------------------------------------------------------------
def _result(ws: Workspace, version: str, ok: bool = True, error: ErrorInfo | None = None) -> LadderResult:
    """A stored-looking result of vector_add ``version`` about the files on disk now (compile and correctness)."""
    k = ws.versions("vector_add")[[v.version for v in ws.versions("vector_add")].index(version)]
    rungs = [RungResult("compile", Status.OK, 0.1, "triton: add_kernel(w=4,s=3)")]
    if error is not None:
        rungs.append(RungResult("correctness", Status.FAILED, 0.1, error=error))
    else:
        rungs.append(RungResult("correctness", Status.OK if ok else Status.FAILED, 0.1, "worst=(1,)"))
    return LadderResult(
        "vector_add",
        version,
        f"kernels/vector_add/{version}.py",
        {"type": "cpu", "interpreter": True},
        rungs,
        source_sha256=sha256(k.path.read_bytes()),
        reference_sha256=sha256(ws.reference_path("vector_add").read_bytes()),
        started_at=1.0,
    )


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def stale_ws(make_ws):
    """vector_add v1 and v2 with stored results about the files; then v2 edited (as while ktui was closed)."""
    ws = make_ws(
        ["vector_add"],
        {"vector_add/v1": ROOT / "kernels/vector_add/v1.py", "vector_add/v2": ROOT / "kernels/vector_add/v2.py"},
    )
    store = ResultStore(ws)
    for v in ("v1", "v2"):
        store.save(_result(ws, v))
    with (ws.root / "kernels/vector_add/v2.py").open("a") as f:
        f.write("# edited while ktui was closed\n")
    return ws


def _session(ws: Workspace) -> Session:
    """A session that climbs only the compile rung (seconds on the CPU): enough to see which versions ran."""
    session = Session(ws, "cpu", options=LadderOptions(seeds=1, rungs=("compile",)), watch=False)
    session.start()
    return session


@pytest.mark.anyio
async def test_a_stale_result_is_marked_in_the_tree_and_queued_at_start_up(stale_ws):
    ws = stale_ws
    app = KtuiApp(ws, start_session=False)  # the stored results alone: what the first screen shows
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        tree = app.query_one(KernelTree)
        assert tree.label_of("vector_add/v1") == "v1   ✓ ok"
        assert tree.label_of("vector_add/v2") == "v2   ✓ ok (stale)"
        assert app.states["vector_add/v2"].stale == STALE_KERNEL
        app.select(ws.versions("vector_add")[1])
        details = str(app.query_one("#details").render())
        assert f"STALE: {STALE_KERNEL}" in details, details

    session = _session(ws)
    started: list[str] = []
    session.bus.subscribe(lambda ev: started.append(ev.key) if type(ev).__name__ == "LadderStarted" else None)
    try:
        app = KtuiApp(ws, session=session)
        async with app.run_test(size=(100, 30)) as pilot:
            st = app.states["vector_add/v2"]
            await wait_for(pilot, lambda: st.result is not None and st.result.rung("correctness") is None, 180, "v2")
            await pilot.pause(0.2)
            assert started == ["vector_add/v2"]  # only the stale version ran
            assert st.result.source_sha256 == sha256((ws.root / "kernels/vector_add/v2.py").read_bytes())
            # that run (this session climbs compile alone) gave no verdict: the one before stays, as the last
            # verdict, stale, and the version still needs a run
            assert st.stale == "" and st.unverified == UNVERIFIED
            assert app.query_one(KernelTree).label_of("vector_add/v2") == "v2   ✓ ok (stale)"
    finally:
        session.stop()
    app = KtuiApp(ws, start_session=False)  # the next start-up queues it again
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        assert stale_keys(app.states) == ["vector_add/v2"]


@pytest.mark.anyio
async def test_the_timings_verdict_follows_the_queue_as_the_tree_does(stale_ws):
    """New-user trial 35, F11: after X withdrew the queued runs the tree read "✗ correctness (stale)" and the Timings
    tab's verdict column still what it showed before: a queue change refreshes the Timings tab too."""
    from ktui.core.events import QueueChanged
    from ktui.tui.widgets import TimingsTable

    app = KtuiApp(stale_ws, start_session=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.1)
        app.select(stale_ws.versions("vector_add")[1])
        await pilot.pause(0.1)
        timings = app.query_one(TimingsTable)
        app._queue(QueueChanged(running=None, rung=None, waiting=("vector_add/v2",)))
        await pilot.pause(0.1)
        assert str(timings.get_cell("v2", "verdict")) == "… queued"
        app._queue(QueueChanged(running=None, rung=None, waiting=()))  # withdrawn
        await pilot.pause(0.1)
        assert str(timings.get_cell("v2", "verdict")) == "✓ ok (stale)"
        assert app.query_one(KernelTree).label_of("vector_add/v2") == "v2   ✓ ok (stale)"


@pytest.mark.anyio
async def test_with_stale_mark_nothing_runs_at_start_up_and_u_runs_the_stale(stale_ws):
    ws = stale_ws
    (ws.root / "ktui.toml").write_text('[tui]\nstale = "mark"\n')
    session = _session(ws)
    started: list[str] = []
    session.bus.subscribe(lambda ev: started.append(ev.key) if type(ev).__name__ == "LadderStarted" else None)
    try:
        for w in session.pool.workers:
            w.ensure_ready()
        app = KtuiApp(ws, session=session)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.5)
            assert started == [] and app.states["vector_add/v2"].stale == STALE_KERNEL
            assert "Run stale versions" in {c.title for c in app.get_system_commands(app.screen)}
            await pilot.press("u")
            st = app.states["vector_add/v2"]
            await wait_for(pilot, lambda: st.result is not None and st.result.rung("correctness") is None, 180, "v2")
            assert started == ["vector_add/v2"] and st.stale == "" and st.unverified == UNVERIFIED
    finally:
        session.stop()


@pytest.mark.anyio
async def test_a_second_ktui_on_the_workspace_runs_no_stale_version_at_start_up(stale_ws):
    """New-user trial 26, F23: a second ktui on a workspace said it "runs what you ask (r, a), not saves", yet queued
    and ran the stale version at start-up on its own. Only the session that runs the workspace's saves (it holds
    ``.ktui/watch.lock``) runs the stale versions at start-up; the other still marks them stale."""
    from ktui.core.watcher import release_watch_lock, take_watch_lock

    ws = stale_ws
    first, _ = take_watch_lock(ws.state_dir)  # the first ktui's
    assert first is not None
    session = Session(ws, "cpu", options=LadderOptions(seeds=1, rungs=("compile",)), watch=True)
    started: list[str] = []
    session.bus.subscribe(lambda ev: started.append(ev.key) if type(ev).__name__ == "LadderStarted" else None)
    try:
        session.start()
        assert session.runs_saves is False
        app = KtuiApp(ws, session=session)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(1.0)
            assert started == [] and app.states["vector_add/v2"].stale == STALE_KERNEL
    finally:
        session.stop()
        release_watch_lock(first)


@pytest.mark.anyio
async def test_a_reference_error_marks_the_problem_and_no_version(stale_ws):
    """v1's latest result failed because ``ref_kernel`` raised: v1 shows ``! reference`` (not ``✗ correctness``)
    and the problem ``! reference error``; once the reference changes on disk the mark goes (the result is stale)."""
    ws = stale_ws
    error = ErrorInfo("ValueError", "reference error (references/vector_add.py:16 in ref_kernel): ref_kernel raised")
    ResultStore(ws).save(_result(ws, "v1", error=error))
    app = KtuiApp(ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        tree = app.query_one(KernelTree)
        assert tree.label_of("vector_add/v1") == "v1   ! reference"
        assert tree.problem_label_of("vector_add") == "vector_add  ! reference error"
        with ws.reference_path("vector_add").open("a") as f:
            f.write("# fixed\n")
        st = app.states["vector_add/v1"]
        assert st.refresh_stale(ws) and st.stale == STALE_REFERENCE
        tree.update_version(ws.versions("vector_add")[0], st)
        assert tree.problem_label_of("vector_add") == "vector_add"
        assert tree.label_of("vector_add/v1") == "v1   ! reference (stale)"


def test_version_state_badges(stale_ws):
    ws = stale_ws
    st = VersionState("vector_add/v1", result=_result(ws, "v1"))
    assert st.badge() == ("✓ ok", "green")
    st.stale = STALE_KERNEL
    assert st.badge() == ("✓ ok (stale)", "dim italic")
    st.queued = True
    assert st.badge() == ("… queued", "yellow")  # what happens next outranks the old verdict


def test_a_copys_badge_names_the_version_that_ran_and_is_not_run_once_the_copy_is_edited(stale_ws):
    """New-user trial 19 M3: ``n`` copied v2 to v3, which showed ``✓ ok``, and after an edit ``✓ ok (stale)``,
    a verdict v3 never earned; the Details line said the verdict still stood."""
    ws = stale_ws
    v1, v2 = ws.versions("vector_add")[:2]
    v2.path.write_text(v1.path.read_text())  # what ``n`` does
    carried = _result(ws, "v1").carried("v2", "kernels/vector_add/v2.py")
    st = VersionState("vector_add/v2", result=carried)
    assert st.badge() == ("✓ ok (as v1)", "green")
    assert "its verdict stands for v2" in "".join(t for t, _ in report.details(v2, carried))
    st.stale = STALE_KERNEL
    assert st.badge() == ("· not run", "dim")
    text = "".join(t for t, _ in report.details(v2, carried, stale=STALE_KERNEL))
    assert "does not stand for v2 now, which has not run" in text and "stands for v2 (" not in text
    ResultStore(ws).save(carried)
    line = next(x for x in report.status_lines(workspace_status(ws)) if x.startswith("  v2 "))
    assert "(the run of v1)" in line and "STALE" not in line, line
    with v2.path.open("a") as f:
        f.write("# edited\n")
    lines = report.status_lines(workspace_status(ws))
    line = next(x for x in lines if x.startswith("  v2 "))
    assert "(the run of v1, on the source it had when copied)  STALE: " in line, line
    # new-user trial 25, F6: status said "✓ ok" and counted it ok where the tree says "· not run"
    assert line.startswith("  v2   · not run"), line
    assert st.rung("run") == ("-", None)  # and the ladder pane shows no run of v1's for it (F5)


# -- a verdict followed by a run without one (ktui diff) ----------------------------------------------------
def _compiled_only(ws: Workspace, version: str) -> LadderResult:
    """What ``ktui diff`` stores for ``version`` as it is on disk: compile and dumps, no verdict."""
    k = ws.versions("vector_add")[[v.version for v in ws.versions("vector_add")].index(version)]
    return LadderResult(
        "vector_add",
        version,
        f"kernels/vector_add/{version}.py",
        {"type": "cpu", "interpreter": True},
        [RungResult("compile", Status.OK, 0.1), RungResult("dumps", Status.OK, 0.2, "add_kernel: 16 regs")],
        source_sha256=sha256(k.path.read_bytes()),
        reference_sha256=sha256(ws.reference_path("vector_add").read_bytes()),
        started_at=50.0,
    )


def test_a_run_without_a_verdict_keeps_the_last_verdict_and_leaves_the_version_to_run(stale_ws):
    """v2 failed its run, was edited, then only compiled (``ktui diff``): the stored result keeps ``✗ run`` as its
    last verdict (about the old source: stale), ``ktui status`` says UNVERIFIED with that verdict, the tree shows
    ``✗ run (stale)`` and start-up queues v2. Compiled again, the last verdict is carried on; a run with a verdict
    drops it; compiled on the very source its verdict judged, that verdict stands (nothing to run)."""
    from ktui.core import report
    from ktui.core.ladder.runner import merge

    ws = stale_ws  # v2's file changed since the results were stored
    old = _result(ws, "v2", error=ErrorInfo("RuntimeError", "boom"))
    old.rungs[1] = RungResult("run", Status.FAILED, 0.1, "RuntimeError: boom", error=ErrorInfo("RuntimeError", "boom"))
    old.source_sha256 = "1" * 64  # the source before the edit
    assert report.verdict(old)[0] == "✗ run" and old.has_verdict
    merged = merge(old, _compiled_only(ws, "v2"))
    assert not merged.has_verdict and report.verdict(merged)[0] == "◦ compiled"
    last = merged.last_verdict
    assert (last.verdict, last.ok, last.failed_rung, last.source_sha256) == ("✗ run", False, "run", "1" * 64)
    store = ResultStore(ws)
    store.save(merged)
    assert store.load("vector_add", "v2").last_verdict == last  # stored and read back

    v2 = workspace_status(ws)[0].versions[1]
    assert (v2.verdict, v2.stale, v2.unverified) == ("◦ compiled", "", UNVERIFIED)
    assert (v2.last_verdict, v2.last_verdict_stale, v2.last_verdict_at) == ("✗ run", STALE_KERNEL, 1.0)
    lines = report.status_lines(workspace_status(ws), now=61.0)
    assert lines[2] == (
        f"  v2   ◦ compiled  cpu (interpreter), 11 s ago  UNVERIFIED: {UNVERIFIED}; last verdict ✗ run, 1 min ago, "
        f"STALE: {STALE_KERNEL}"
    ), lines
    assert lines[-1] == (
        "2 versions: 1 ok, 1 unverified; 1 to run again, unverified (ktui runs them at start-up; or ktui run "
        "KERNEL_FILE)"
    )
    js = data_of(ktui("status", "--json", cwd=ws.root).stdout, "status")["problems"][0]["versions"][1]
    assert (js["unverified"], js["last_verdict"], js["last_verdict_stale"]) == (UNVERIFIED, "✗ run", STALE_KERNEL)

    st = VersionState("vector_add/v2", result=store.load("vector_add", "v2"))
    assert st.refresh_stale(ws) and st.unverified == UNVERIFIED
    assert st.badge() == ("✗ run (stale)", "dim italic")
    assert stale_keys({"vector_add/v2": st}) == ["vector_add/v2"]
    # only ever compiled (``ktui diff`` on a version never run: no verdict to follow): marked, not queued at start-up
    # (new-user trial 21 F22: one diff against matmul/v1 queued its minutes-long CPU ladder at every start)
    from ktui.core.status import needs_run

    never = VersionState("vector_add/v2", result=_compiled_only(ws, "v2"))
    assert never.refresh_stale(ws) and never.unverified == UNVERIFIED
    assert stale_keys({"vector_add/v2": never}) == []
    assert needs_run(ws, ws.versions("vector_add")[1], never.result) == ""
    assert needs_run(ws, ws.versions("vector_add")[1], st.result) == UNVERIFIED
    details = "".join(t for t, _ in report.details(ws.versions("vector_add")[1], st.result, "", st.unverified))
    assert f"UNVERIFIED: {UNVERIFIED}" in details and "last verdict: ✗ run run: RuntimeError: boom" in details

    again = merge(merged, _compiled_only(ws, "v2"))
    assert again.last_verdict == last  # carried through another compile
    judged = merge(again, _result(ws, "v2"))
    assert judged.has_verdict and judged.last_verdict is None
    dumped = merge(judged, _compiled_only(ws, "v2"))  # compile and dumps on the source judged: rungs merged
    assert [r.name for r in dumped.rungs] == ["compile", "correctness", "dumps"] and dumped.last_verdict is None
    compiled = _compiled_only(ws, "v2")
    compiled.rungs = compiled.rungs[:1]
    same = merge(judged, compiled)  # compile alone (not merged) on the source just judged
    assert same.last_verdict.verdict == "✓ ok" and same.last_verdict.source_sha256 == judged.source_sha256
    st = VersionState("vector_add/v2", result=same)
    st.refresh_stale(ws)
    assert (st.stale, st.unverified, st.badge()) == ("", "", ("✓ ok", "green"))
    # ktui status says the same as the tree (a new user saw "◦ compiled" there and "✓ ok" in the tree)
    store.save(same)
    v2 = workspace_status(ws)[0].versions[1]
    assert (v2.verdict, v2.ok, v2.unverified, v2.last_verdict) == ("✓ ok", True, "", "✓ ok")
    line = report.status_lines(workspace_status(ws), now=same.last_verdict.started_at + 60)[2]
    assert line.startswith("  v2   ✓ ok") and "(the verdict of 1 min ago; compiled again since, same files)" in line


def test_status_takes_a_problem_name_as_eval_does_and_help_lists_every_command(make_ws):
    """A new user typed `ktui status rmsnorm` (as `ktui eval rmsnorm`) and got 'not a ktui workspace'; `ktui --help`
    named five of the thirteen commands."""
    from ktui.cli import COMMAND_HELP, COMMANDS

    ws = make_ws(["vector_add", "softmax"])
    p = ktui("status", "softmax", cwd=ws.root / "kernels")  # a problem of the workspace at or above the folder
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("softmax  (references/softmax.py)") and "vector_add" not in p.stdout, p.stdout
    p = ktui("status", "nope", cwd=ws.root)
    assert p.returncode == 2 and "nope is neither a folder nor a problem of the workspace" in p.stderr, p.stderr
    assert "(its problems: softmax, vector_add)" in p.stderr, p.stderr
    assert ktui("status", str(ws.root), cwd=ws.root.parent).stdout.count("references/") == 2  # a folder still is one
    assert sorted(name for name, _, _ in COMMAND_HELP) == sorted(COMMANDS)
    text = " ".join(ktui("--help", cwd=ws.root).stdout.split())
    assert all(f"`ktui {name}" in text for name in COMMANDS), text


def test_status_takes_a_version_as_run_and_diff_do(make_ws):
    """New-user trial 19: `ktui status dequant8/v3` said 'neither a folder nor a problem'."""
    ws = make_ws(["softmax"], {"softmax/v1": ROOT / "kernels" / "softmax" / "v1.py"})
    (ws.root / "kernels" / "softmax" / "v2.py").write_text((ROOT / "kernels" / "softmax" / "v2.py").read_text())
    for name in ("softmax/v2", "kernels/softmax/v2.py"):
        p = ktui("status", name, cwd=ws.root)
        assert p.returncode == 0, p.stderr
        assert "  v2   " in p.stdout and "  v1   " not in p.stdout and "1 version:" in p.stdout, p.stdout
    p = ktui("status", "softmax/v9", cwd=ws.root)
    assert p.returncode == 2, p.stderr
    assert "softmax/v9 is no version of softmax (its versions: softmax/v1, softmax/v2)" in p.stderr


def test_status_of_one_version_gives_its_whole_reason():
    """New-user trial 32, F8: ``ktui status xent/v2`` cut a compile timeout's reason to a line ("... while running
    the launch xent_fwd_kernel(..."); named alone, a version's reason is whole (the list of all still cuts it)."""
    from ktui.core.report import status_lines
    from ktui.core.status import ProblemStatus, VersionStatus

    why = "WorkerTimeout: compile: timed out after 120 s while running the launch xent_fwd_kernel(logits, loss) " * 2
    v = VersionStatus(
        "xent/v2", "xent", "v2", "kernels/xent/v2.py", "✗ compile", False, "compile", "", None, "", 0.0, "cpu",
        reason=why.strip(),
    )  # fmt: skip
    p = ProblemStatus("xent", "references/xent.py", "", [v])
    cut = status_lines([p], now=60.0)[1]
    assert "..." in cut and why.strip() not in cut, cut
    whole = status_lines([p], now=60.0, whole=True)[1]
    assert f"({why.strip()})" in whole, whole


def test_status_says_in_one_short_line_why_a_version_failed():
    """New-user trial 24, F9: a 374 s timeout and an out-of-bounds load both read ``✗ run``."""
    from ktui.core.results import ErrorInfo, RungResult, Status
    from ktui.core.status import failure_reason, short_reason

    oob = RungResult(
        "run",
        Status.FAILED,
        error=ErrorInfo(
            "OutOfBoundsAccess",
            "spec=(7, 24, 1025, bf16) seed=9 layout=transposed (in[0] transposed, strides (1, 7)): out-of-bounds load "
            "at offset 113775 of v_ptr (bfloat16, 113775 elements up to the end of its storage), v1.py line 17",
        ),
    )
    assert short_reason(failure_reason(oob)) == (
        "OutOfBoundsAccess: (7, 24, 1025, bf16) transposed: out-of-bounds load at offset 113775..."
    )
    assert len(short_reason(failure_reason(oob))) <= 90
    # whole in --json (new-user trial 25, F20: a script reading ``reason`` got a fragment ending in "...")
    assert failure_reason(oob).endswith("up to the end of its storage), v1.py line 17"), failure_reason(oob)
    # new-user trial 35, F12: a message giving its type after the case does not get it twice
    twice = RungResult(
        "run",
        Status.FAILED,
        error=ErrorInfo("OutOfBoundsAccess", "spec=(2, 32000) seed=3: OutOfBoundsAccess: out-of-bounds load at x"),
    )
    assert failure_reason(twice) == "(2, 32000): OutOfBoundsAccess: out-of-bounds load at x", failure_reason(twice)
    hang = RungResult("run", Status.FAILED, error=ErrorInfo("WorkerTimeout", "timed out: nothing finished for 120 s"))
    assert failure_reason(hang) == "WorkerTimeout: timed out: nothing finished for 120 s"
    assert failure_reason(None) == ""
    # new-user trial 26, F5: three correctness failures read alike ("(CorrectnessError: output out: 10 NaN/inf where
    # the reference differs (NaN positions mus...)"): the case in short first, no boilerplate
    wrong = RungResult(
        "correctness",
        Status.FAILED,
        error=ErrorInfo(
            "CorrectnessError",
            "spec=(300, 17, 129, fp16) seed=5 dist=shifted layout=transposed (in[0] transposed, strides (1, 300)) "
            "fill=decoy: output out: 10 NaN/inf where the reference differs (NaN positions must match the "
            "reference's), first at [0]",
        ),
    )
    assert failure_reason(wrong) == (
        "(300, 17, 129, fp16) shifted transposed: 10 NaN/inf where the reference differs, first at [0]"
    )
    assert short_reason(failure_reason(wrong)).startswith("(300, 17, 129, fp16) shifted transposed: 10 NaN/inf")


def test_a_reference_restored_while_ktui_was_closed_takes_back_the_verdict_on_that_content(make_ws):
    """New-user trial 35, F9: v1 passed against the reference, failed against an edit of it, and the reference was
    restored byte for byte while ktui was closed: ``ktui status`` showed the failure, stale, and the TUI queued the
    version, where its verdict on exactly those files was kept (``ResultStore.judged`` by content). The stored
    result is now read through ``status.current_result``."""
    from ktui.core.status import current_result, workspace_status

    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v1.py"})
    k = ws.versions("vector_add")[0]
    store = ResultStore(ws)
    store.save(_result(ws, "v1"))  # ok against the reference as it is
    ref = ws.reference_path("vector_add")
    original = ref.read_bytes()
    ref.write_bytes(original + b"\nallow_nan = True\n")
    store.save(_result(ws, "v1", ok=False))  # failed against the edit
    assert current_result(ws, store, k).rungs[-1].status is Status.FAILED  # about the files now
    ref.write_bytes(original)  # restored, ktui closed
    assert store.load("vector_add", "v1").rungs[-1].status is Status.FAILED  # (the last stored: stale)
    r = current_result(ws, store, k)
    assert r is not None and r.rungs[-1].status is Status.OK and not staleness(ws, k, r)
    [problem] = workspace_status(ws)
    assert problem.versions[0].ok is True and not problem.versions[0].stale, problem.versions[0]
