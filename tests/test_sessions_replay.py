"""``ktui replay``: the read-only replay screen driven by Pilot over hand-built logs (every panel is the fold of the
records up to the position), a log with a corrupt middle line, the CLI's errors, and ``--rerun``: its comparison
on fake re-runs, then one real re-run of vector_add on the CPU through the installed ``ktui``."""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.coordinate import Coordinate

from ktui.agent.events import (
    AgentState,
    ApprovalDecided,
    ApprovalRequest,
    ChatDelta,
    ChatMessage,
    ChatReplyDone,
    ToolCall,
)
from ktui.core.events import Event, LadderFinished, LadderStarted, Notice, RungFinished, RungStarted, WorkerState
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.sessions import rerun as rr
from ktui.sessions.fold import fold, timeline
from ktui.sessions.log import envelope, read_log
from ktui.tui.chat import ChatPane
from ktui.tui.replay import ReplayApp, clock
from ktui.tui.widgets import LadderTable

from .conftest import ROOT
from .jsonout import data_of, error_of
from .test_cli import ktui
from .test_widgets import hand_result

SID = "20261201-140000-ab12"
T0 = 1796152000.0
CPU = {"type": "cpu", "name": "cpu", "interpreter": True}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class LogBuilder:
    """A session folder written by hand: records as ``ktui.sessions.record`` writes them (``log.envelope`` around
    ``Event.to_json()`` less its ``event`` key), blobs by SHA-256."""

    def __init__(self, root: Path, sid: str = SID, device: dict | None = None, model: str | None = "scripted/test"):
        self.dir = root / "sessions" / sid
        (self.dir / "blobs").mkdir(parents=True)
        self.lines: list[dict] = []
        self.add(
            "session",
            {"id": sid, "started": T0, "ktui_version": "0.1.0", "workspace": str(root), "command": "tui"}
            | {"device": device or CPU, "model": model, "env": []},
        )

    def add(self, type_: str, data: dict) -> None:
        self.lines.append(envelope(len(self.lines), T0 + len(self.lines), type_, data))

    def ev(self, e: Event) -> None:
        d = e.to_json()
        d.pop("event")
        d["at"] = T0 + len(self.lines)
        self.add(e.kind, d)

    def source(self, path: str, content: bytes, role: str) -> str:
        (self.dir / "blobs" / sha(content)).write_bytes(content)
        self.add("source", {"path": path, "sha256": sha(content), "bytes": len(content), "role": role})
        return sha(content)

    def write(self, corrupt: int | None = None) -> Path:
        """The log; line ``corrupt`` (from 1) replaced by garbage."""
        text = [json.dumps(r) for r in self.lines]
        if corrupt is not None:
            text[corrupt - 1] = text[corrupt - 1][:25] + "#garbled"
        (self.dir / "events.jsonl").write_text("\n".join(text) + "\n")
        return self.dir


REF = (ROOT / "references/vector_add.py").read_bytes()
K1 = (ROOT / "kernels/vector_add/v1.py").read_bytes()
K2 = K1.replace(b"BLOCK", b"BLK")  # v2: v1 with another name
K3 = K2.replace(b"BLK=128", b"BLK=256")  # v2 edited


def agent_session(root: Path) -> LogBuilder:
    """A short agent session: the human asks, the model runs v1 (✓ 1.00x), writes v2 (approved), v2 fails
    correctness, the human edits v2, the results go back to the model."""
    b = LogBuilder(root, device={"type": "cuda", "name": "NVIDIA H200", "capability": [9, 0]})
    b.ev(WorkerState(role="candidate", state="ready"))
    rsha = b.source("references/vector_add.py", REF, "reference")
    k1 = b.source("kernels/vector_add/v1.py", K1, "kernel")
    b.ev(ChatMessage(role="user", text="make vector_add faster"))
    b.ev(AgentState(state="thinking", detail="scripted/test"))
    b.ev(ChatDelta(text="Let me"))
    b.ev(ChatReplyDone("Let me run v1 first.", 100, 20, 0.001, 120, 0.001))
    b.ev(ToolCall(call_id="c1", name="run_ladder", summary="vector_add/v1", state="running"))
    r1 = replace(hand_result("v1", True), source_sha256=k1, reference_sha256=rsha)
    b.ev(LadderStarted(key="vector_add/v1", run_id=1, source_sha256=k1, rungs=("compile", "run", "correctness")))
    for r in r1.rungs:
        b.ev(RungStarted(key="vector_add/v1", run_id=1, rung=r.name))
        b.ev(RungFinished(key="vector_add/v1", run_id=1, result=r))
    b.ev(LadderFinished(key="vector_add/v1", run_id=1, result=r1))
    b.ev(ToolCall(call_id="c1", name="run_ladder", summary="vector_add/v1", state="done", detail="✓ 1.00x"))
    k2 = b.source("kernels/vector_add/v2.py", K2, "kernel")
    b.ev(ApprovalRequest(request_id=1, path="kernels/vector_add/v2.py", diff="-a\n+b\n", new_file=True, added=1))
    b.ev(ApprovalDecided(request_id=1, approved=True))
    r2 = replace(hand_result("v2", False), source_sha256=k2, reference_sha256=rsha)
    b.ev(LadderStarted(key="vector_add/v2", run_id=2, source_sha256=k2, rungs=("compile", "run", "correctness")))
    b.ev(RungStarted(key="vector_add/v2", run_id=2, rung="compile"))
    b.ev(LadderFinished(key="vector_add/v2", run_id=2, result=r2))
    b.source("kernels/vector_add/v2.py", K3, "kernel")  # the human edits v2 (no run follows)
    b.ev(ChatMessage(role="results", text="vector_add/v2: ✗ correctness"))
    b.ev(Notice(level="warning", message="a recorded notice"))
    b.add("end", {"reason": "quit"})
    return b


def snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime) for p in root.rglob("*")}


def ladder_cell(app: ReplayApp, rung: str, col: str = "status") -> str:
    return str(app.query_one(LadderTable).get_cell(rung, col))


def plain(app: ReplayApp, selector: str) -> str:
    """A Static's content as plain text, as drawn 200 columns wide."""
    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(app.query_one(selector).content)
    return console.export_text()


def verdicts(app: ReplayApp) -> list[str]:
    table = app.query_one("#timeline")
    return [str(table.get_cell_at(Coordinate(i, 2))) for i in range(table.row_count)]


def chat_classes(app: ReplayApp) -> list[str]:
    return [" ".join(sorted(w.classes)) for w in app.query_one(ChatPane).log_view.children]


# -- navigation ------------------------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_every_position_shows_the_fold_of_the_records_up_to_it(tmp_path):
    log = read_log(agent_session(tmp_path).write())
    recs = log.records
    app = ReplayApp(log)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert app.position == 1 and app.state == fold(recs[:1])
        assert app.position_line() == f"event 1/{len(recs)} · {clock(T0)} · session start · scripted/test"
        for i in range(2, len(recs) + 1):  # one event forward at a time: each state is the fold up to it
            await pilot.press("right" if i % 2 else "l")
            assert app.position == i
            assert app.state == fold(recs[:i])
        assert app.position_line() == f"event {len(recs)}/{len(recs)} · {clock(T0 + len(recs) - 1)} · end quit"
        await pilot.press("right")  # at the end: stays
        assert app.position == len(recs)
        for i in range(len(recs) - 1, 0, -1):  # and back
            await pilot.press("left" if i % 2 else "h")
            assert app.position == i and app.state == fold(recs[:i])
        await pilot.press("left")
        assert app.position == 1


@pytest.mark.anyio
async def test_n_p_m_e_g_jump_to_results_messages_and_edits_and_the_panels_follow(tmp_path):
    log = read_log(agent_session(tmp_path).write())
    recs = log.records
    tl = timeline(recs)
    app = ReplayApp(log)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert verdicts(app) == ["…", "…"]  # no verdict before its run
        await pilot.press("n")
        assert app.position == tl.results[0] + 1
        assert app.position_line().endswith("LadderFinished vector_add/v1 ✓ 1.00x")
        assert app.selected == "vector_add/v1"
        assert ladder_cell(app, "correctness") == "ok" and ladder_cell(app, "benchmark") == "ok"
        assert verdicts(app) == ["✓ 1.00x", "…"]
        await pilot.press("n")
        assert app.position == tl.results[1] + 1
        assert app.selected == "vector_add/v2" and ladder_cell(app, "correctness") == "FAILED"
        assert verdicts(app) == ["✓ 1.00x", "✗ correctness"]
        await pilot.press("n")  # no later result: stays
        assert app.position == tl.results[1] + 1
        await pilot.press("p")
        assert app.position == tl.results[0] + 1
        await pilot.press("g")
        assert app.position == 1 and app.selected is None
        assert ladder_cell(app, "compile") == "-"
        await pilot.press("m")
        assert app.position == tl.messages[0] + 1 and recs[app.position - 1].type == "ChatMessage"
        assert chat_classes(app) == ["chat-user"]
        await pilot.press("m")
        assert recs[app.position - 1].type == "ChatReplyDone"
        await pilot.press("M")
        assert app.position == tl.messages[0] + 1 and chat_classes(app) == ["chat-user"]
        await pilot.press("g", "e")
        assert app.position == tl.edits[0] + 1
        assert "edit 1/4 references/vector_add.py (reference)" in plain(app, "#edit")
        assert "def ref_kernel" in plain(app, "#edit")  # first seen: the file itself
        await pilot.press("e", "e")
        edit = plain(app, "#edit")
        assert app.position == tl.edits[2] + 1 and "edit 3/4 kernels/vector_add/v2.py (kernel)" in edit
        assert "(first seen)" in edit and "BLK=128" in edit
        await pilot.press("e")
        edit = plain(app, "#edit")
        assert app.position == tl.edits[3] + 1 and f"(was {sha(K2)[:12]})" in edit
        assert "-    add_kernel" in edit and "+    add_kernel" in edit and "BLK=256" in edit  # its diff
        await pilot.press("E")
        assert app.position == tl.edits[2] + 1 and "edit 3/4 kernels/vector_add/v2.py" in plain(app, "#edit")
        await pilot.press("G")
        assert app.position == len(recs) and app.state == fold(recs)
        assert "ended: quit" in plain(app, "#info")


@pytest.mark.anyio
async def test_a_run_in_flight_shows_its_rungs_and_the_chat_follows_back_and_forth(tmp_path):
    log = read_log(agent_session(tmp_path).write())
    recs = log.records
    at = next(i for i, r in enumerate(recs, 1) if r.type == "RungStarted" and r.data["key"] == "vector_add/v2")
    app = ReplayApp(log, position=at)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert app.selected == "vector_add/v2" and ladder_cell(app, "compile") == "running"
        assert ladder_cell(app, "correctness") == "waiting"
        full = chat_classes(app)
        assert full[-1] == "chat-line" and "chat-diff" in full  # the approval's diff, then "applied"
        assert not app.query_one("#approval").display and not app.query_one("#chat-input").display
        await pilot.press("G")
        assert chat_classes(app)[-1] == "chat-results"
        await pilot.press("h", "h", "h")
        assert chat_classes(app) == full  # stepping back removes what came after
        # a fresh replay opened at the same position draws the same chat
        fresh = ReplayApp(log, position=app.position)
        async with fresh.run_test(size=(140, 45)) as p2:
            await p2.pause()
            assert chat_classes(fresh) == chat_classes(app)


@pytest.mark.anyio
async def test_autoplay_advances_at_its_speed_and_stops_at_the_end(tmp_path):
    log = read_log(agent_session(tmp_path).write())
    app = ReplayApp(log, speed=16.0)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        await pilot.press("plus")
        assert app.speed == 32.0 and "32 ev/s" in plain(app, "#position")
        await pilot.press("minus", "minus")
        assert app.speed == 8.0
        await pilot.press("space")
        assert app.playing and "▶ playing 8 ev/s" in plain(app, "#position")
        start = time.monotonic()
        while app.position < 4 and time.monotonic() - start < 10:
            await pilot.pause(0.05)
        assert app.position >= 4
        await pilot.press("space")
        assert not app.playing
        stopped = app.position
        await pilot.pause(0.4)
        assert app.position == stopped  # paused: no more steps
        assert app.state == fold(log.records[:stopped])
        await pilot.press("plus", "plus", "plus")  # 64 ev/s: to the end in under a second
        await pilot.press("space")
        start = time.monotonic()
        while app.playing and time.monotonic() - start < 10:
            await pilot.pause(0.05)
        assert not app.playing and app.position == len(log.records)


@pytest.mark.anyio
async def test_a_corrupt_middle_line_and_a_truncated_last_line_are_a_notice_and_the_rest_replays(tmp_path):
    b = agent_session(tmp_path)
    folder = b.write(corrupt=12)
    with (folder / "events.jsonl").open("a") as f:
        f.write('{"v": 1, "seq": 99, "t": 1')  # killed mid-line
    log = read_log(folder)
    assert [p.kind for p in log.problems][:1] == ["corrupt"] and log.problems[-1].kind == "truncated"
    app = ReplayApp(log)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        notice = app.query_one("#notice")
        assert notice.display
        text = plain(app, "#notice")
        assert "line 12: not JSON" in text and "the rest replays" in text
        await pilot.press("G")
        assert app.position == len(b.lines) - 1  # every line but the corrupt one
        assert app.state == fold(log.records) and app.state.ended
        assert ladder_cell(app, "correctness") == "FAILED"
        app.action_show_tab("tab-notices")
        await pilot.pause()
        notices = plain(app, "#notices")
        assert "log: line 12: not JSON" in notices and "a recorded notice" in notices


@pytest.mark.anyio
async def test_every_replay_key_is_in_the_command_palette_and_runs_from_there(tmp_path):
    log = read_log(agent_session(tmp_path).write())
    app = ReplayApp(log)
    async with app.run_test(size=(140, 45)) as pilot:
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {"Step", "Back", "Next result", "Prev result", "Next message", "Next edit", "Play/pause"} <= set(
            commands
        )
        assert {"Faster", "Slower", "First", "Last"} <= set(commands)
        await pilot.press("ctrl+p")
        await pilot.press(*"next result")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.position == timeline(log.records).results[0] + 1


@pytest.mark.anyio
async def test_the_replay_writes_nothing(tmp_path):
    folder = agent_session(tmp_path).write()
    before = snapshot(tmp_path)
    app = ReplayApp(read_log(folder))
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("G", "g", "n", "e", "4", "3")
        await pilot.pause()
    assert snapshot(tmp_path) == before


def test_the_replay_screen_imports_no_torch_and_the_rerun_no_screen():
    from .test_boundaries import _modules_after

    mods = _modules_after("import ktui.tui.replay")
    assert "textual" in mods and not {"torch", "triton", "numpy", "litellm"} & mods
    mods = _modules_after("import ktui.sessions.rerun")
    assert "ktui.sessions.fold" in mods and not {"textual", "ktui.tui", "torch", "triton", "numpy"} & mods


# -- the command line ------------------------------------------------------------------------------------------------
def test_replay_of_an_unknown_or_ambiguous_session_exits_2_with_one_line(tmp_path):
    agent_session(tmp_path).write()
    LogBuilder(tmp_path, sid="20261201-150000-cd34").write()
    p = ktui("replay", "nosuch", "--workspace", str(tmp_path))
    assert p.returncode == 2 and p.stderr.startswith("ktui: error: no session 'nosuch'")
    assert len(p.stderr.strip().splitlines()) == 1
    p = ktui("replay", "20261201", "--workspace", str(tmp_path))
    assert p.returncode == 2 and "matches 2 sessions" in p.stderr
    p = ktui("replay", SID, "--json", "--workspace", str(tmp_path))
    assert p.returncode == 2 and "go with --rerun" in error_of(p.stdout, "replay", 2, "usage") in p.stderr
    p = ktui("replay", SID, "--at", "x", "--workspace", str(tmp_path))
    assert p.returncode == 2 and "--at takes an event number or 'end', not 'x'" in p.stderr
    p = ktui("replay", SID, "--workspace", str(tmp_path))  # (a pipe, not a terminal)
    assert p.returncode == 2 and "the replay needs a terminal" in p.stderr
    empty = tmp_path / "sessions" / "20261201-160000-ef56"
    empty.mkdir()
    (empty / "events.jsonl").write_text("garbage\n")
    p = ktui("replay", str(empty), "--workspace", str(tmp_path))
    assert p.returncode == 2 and "holds no readable record" in p.stderr


# -- --rerun -----------------------------------------------------------------------------------------------------------
def cpu_result(version: str, ksha: str, rsha: str, ok: bool = True, device: dict | None = None) -> LadderResult:
    corr = RungResult("correctness", Status.OK, 1.0, "worst=(1,) ...")
    if not ok:
        err = ErrorInfo("CorrectnessError", "spec=(129,) seed=3: 1 element unwritten")
        corr = RungResult("correctness", Status.FAILED, 1.0, err.message, error=err)
    rungs = [RungResult("compile", Status.OK, 0.5), RungResult("run", Status.OK, 9.0), corr]
    return LadderResult(
        "vector_add", version, f"kernels/vector_add/{version}.py", device or CPU, rungs, ksha, rsha, T0, 11.0
    )


def bench(result: LadderResult, median_us: float) -> LadderResult:
    spec = {"label": "(268435456,)", "median_us": median_us, "ref_median_us": 741.0, "speedup": 741.0 / median_us}
    return replace(result, rungs=[*result.rungs, RungResult("benchmark", Status.OK, 2.0, "", {"specs": [spec]})])


def rerun_session(root: Path, device: dict, recorded_ok: bool = True) -> LogBuilder:
    """A session that ran vector_add/v1 twice on the same content: a cancelled run, then a verdict."""
    b = LogBuilder(root, device=device, model=None)
    rsha = b.source("references/vector_add.py", REF, "reference")
    k1 = b.source("kernels/vector_add/v1.py", K1, "kernel")
    rungs = ("compile", "run", "correctness")
    b.ev(LadderStarted(key="vector_add/v1", run_id=1, source_sha256=k1, rungs=rungs))
    cancel = RungResult("run", Status.FAILED, 1.0, error=ErrorInfo("RunCancelled", "a newer save"))
    b.ev(LadderFinished(key="vector_add/v1", run_id=1, result=replace(cpu_result("v1", k1, rsha), rungs=[cancel])))
    b.ev(LadderStarted(key="vector_add/v1", run_id=2, source_sha256=k1, rungs=rungs))
    b.ev(LadderFinished(key="vector_add/v1", run_id=2, result=cpu_result("v1", k1, rsha, recorded_ok, device)))
    return b


def test_recorded_versions_are_each_content_once_with_its_latest_verdict(tmp_path):
    b = rerun_session(tmp_path, CPU)
    k2 = b.source("kernels/vector_add/v2.py", K2, "kernel")
    b.ev(LadderStarted(key="vector_add/v2", run_id=3, source_sha256=k2, rungs=("compile",)))  # cut short
    versions = rr.recorded_versions(read_log(b.write()).records)
    assert [(v.key, v.kernel_sha256, v.reference_sha256) for v in versions] == [
        ("vector_add/v1", sha(K1), sha(REF)),
        ("vector_add/v2", sha(K2), sha(REF)),
    ]
    v1, v2 = versions
    assert (v1.runs, v1.cancelled, v1.rungs) == (2, 1, ("compile", "run", "correctness"))
    assert v1.result is not None and v1.result.ok
    assert (v2.runs, v2.result, v2.rungs) == (1, None, ("compile",))
    assert rr.read_blob(b.dir, sha(K2)) == K2


def fake_runner(results):
    def run(session_dir, versions):
        assert rr.read_blob(session_dir, versions[0].kernel_sha256) == K1  # the sources are there
        return {**CPU, "torch": "2.9.0", "triton": "3.5.0"}, results

    return run


def test_rerun_flags_a_changed_verdict_a_timing_outside_the_band_a_device_and_a_missing_source(tmp_path):
    h200 = {"type": "cuda", "name": "NVIDIA H200", "capability": [9, 0], "triton": "3.4.0"}
    b = rerun_session(tmp_path, h200)
    k2 = b.source("kernels/vector_add/v2.py", K2, "kernel")
    b.ev(LadderStarted(key="vector_add/v2", run_id=3, source_sha256=k2, rungs=("compile", "run", "correctness")))
    recorded_v2 = bench(cpu_result("v2", k2, sha(REF), device=h200), 700.0)
    b.ev(LadderFinished(key="vector_add/v2", run_id=3, result=recorded_v2))
    b.ev(LadderStarted(key="vector_add/v3", run_id=4, source_sha256="ef" * 32, rungs=("compile",)))  # no blob
    log = read_log(b.write())
    gpu2 = {**h200, "triton": "3.5.0"}
    new_v1 = cpu_result("v1", sha(K1), sha(REF), ok=False, device=h200)
    new_v2 = bench(cpu_result("v2", k2, sha(REF), device=gpu2), 790.0)  # +12.9 %: outside ±10 %
    rep = rr.rerun(log, runner=fake_runner([new_v1, new_v2, "cannot re-run: no blob efefefefefef"]))
    d = rep.to_json()
    v1, v2, v3 = d["versions"]
    assert (v1["recorded"]["verdict"], v1["new"]["verdict"]) == ("✓ ok", "✗ correctness")
    assert [x["kind"] for x in v1["divergence"]] == ["verdict", "rung"]
    assert v1["divergence"][0]["message"] == "verdict ✓ ok → ✗ correctness"
    assert v1["divergence"][1]["message"] == "correctness: ok → FAILED"
    assert (v2["recorded"]["verdict"], v2["new"]["verdict"]) == ("✓ 1.06x", "✓ 0.94x")
    assert [x["kind"] for x in v2["divergence"]] == ["timing", "device"]
    assert "median 700 → 790 us (+12.9%, band ±10%)" in v2["divergence"][0]["message"]
    assert v2["divergence"][1]["message"] == "triton: 3.4.0 → 3.5.0"
    assert v3["error"] == "cannot re-run: no blob efefefefefef" and v3["new"] is None
    assert v3["recorded"]["verdict"] == "not finished"
    assert d["verdicts_changed"] == 2 and d["diverged"] is True
    assert d["device"]["diverged"] == ["type: cuda → cpu", "name: NVIDIA H200 → cpu", "triton: 3.4.0 → 3.5.0"]
    text = "\n".join(rr.lines(rep))
    assert "! verdict ✓ ok → ✗ correctness" in text and "! timing: (268435456,): median 700 → 790 us" in text
    assert "3 of 3 version(s) diverged, 2 verdict(s) changed or not re-run" in text
    # within a wider band the timing is the same
    rep = rr.rerun(log, band=0.2, runner=fake_runner([new_v1, new_v2, "x"]))
    assert [x.kind for x in rep.rows[1].divergence] == ["device"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_rerun_on_the_cpu_gives_the_new_verdict_beside_the_recorded_one(tmp_path):
    """One real re-run: vector_add/v1 (the example's source, recorded twice: one cancelled run, one verdict) through
    today's ladder on the CPU (compile, run, correctness: the rungs it climbed; about 30 s)."""
    old = {**CPU, "torch": "2.0.0", "triton": "2.1.0"}
    rerun_session(tmp_path, old).write()
    p = ktui("replay", SID[:10], "--rerun", "--device", "cpu", "--json", "--workspace", str(tmp_path), timeout=400)
    assert p.returncode == 0, p.stderr
    d = data_of(p.stdout, "replay")
    assert d["session"] == SID and len(d["versions"]) == 1
    v = d["versions"][0]
    assert v["key"] == "vector_add/v1" and v["runs"] == 2 and v["kernel_sha256"] == sha(K1)
    assert v["recorded"]["verdict"] == "✓ ok" and v["new"]["verdict"] == "✓ ok"
    assert v["new"]["status"] == "ok" and list(v["new"]["rungs"]) == ["compile", "run", "correctness"]
    assert all(r["status"] == "ok" for r in v["new"]["rungs"].values())
    assert v["new"]["device"] == "cpu (interpreter)"
    kinds = [x["kind"] for x in v["divergence"]]
    assert "verdict" not in kinds and "rung" not in kinds and kinds == ["device", "device"]  # torch, triton
    assert d["verdicts_changed"] == 0 and d["device"]["now"]["type"] == "cpu"
    assert [line.split(":")[0] for line in d["device"]["diverged"]] == ["torch", "triton"]
    assert not (tmp_path / "kernels").exists() and not (tmp_path / ".ktui").exists()  # nothing written here


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_rerun_on_the_gpu_times_what_the_cpu_recording_could_not(tmp_path):
    """On the H200 (the lead runs it): vector_add/v1 recorded on the CPU (benchmark skipped) re-run with --device
    cuda: the same verdict, the benchmark now timed (a rung divergence), the device named as diverged."""
    b = LogBuilder(tmp_path, device={**CPU, "torch": "2.0.0", "triton": "2.1.0"}, model=None)
    rsha = b.source("references/vector_add.py", REF, "reference")
    k1 = b.source("kernels/vector_add/v1.py", K1, "kernel")
    rungs = ("compile", "run", "correctness", "benchmark")
    skipped = RungResult("benchmark", Status.SKIPPED, 0.0, "timing under the Triton interpreter is not meaningful")
    recorded = replace(cpu_result("v1", k1, rsha), rungs=[*cpu_result("v1", k1, rsha).rungs, skipped])
    b.ev(LadderStarted(key="vector_add/v1", run_id=1, source_sha256=k1, rungs=rungs))
    b.ev(LadderFinished(key="vector_add/v1", run_id=1, result=recorded))
    b.write()
    p = ktui("replay", SID, "--rerun", "--device", "cuda", "--json", "--workspace", str(tmp_path), timeout=800)
    assert p.returncode == 0, p.stderr
    d = data_of(p.stdout, "replay")
    (v,) = d["versions"]
    assert v["recorded"]["verdict"] == "✓ ok" and v["new"]["status"] == "ok"
    assert v["new"]["device"].startswith("cuda: ") and d["device"]["now"]["type"] == "cuda"
    assert v["new"]["rungs"]["benchmark"]["status"] == "ok" and v["new"]["speedup"] is not None
    assert {"kind": "rung", "message": "benchmark: skipped → ok"} in v["divergence"]
    assert "type: cpu → cuda" in d["device"]["diverged"]
    assert d["verdicts_changed"] == 0


def test_a_rerun_takes_a_timeout_as_ktui_run_does(tmp_path, monkeypatch):
    """New-user trial 28, F6: ``ktui replay SESSION --rerun --timeout 120`` failed "unrecognized arguments", though
    run and eval take it: a session holding a hang could not be re-run with a short limit. The limits reach the
    re-run's session; without --rerun, or with a bad value, it is a usage error naming the option."""
    b = rerun_session(tmp_path, CPU)
    log = read_log(b.write())
    seen: list = []

    def spy(device, versions, session_dir, note=None, timeouts=None):
        seen.append(timeouts)
        return {**CPU, "torch": "2.9.0", "triton": "3.5.0"}, ["not run here"] * len(versions)

    monkeypatch.setattr(rr, "run_versions", spy)
    rr.rerun(log, "cpu", timeouts={"run": 30.0, "compile": 20.0})
    assert seen == [{"run": 30.0, "compile": 20.0}]
    p = ktui("replay", SID[:10], "--timeout", "30", "--workspace", str(tmp_path))
    assert p.returncode == 2 and "--timeout go with --rerun" in p.stderr, p.stderr
    p = ktui("replay", SID[:10], "--rerun", "--timeout", "run=soon", "--workspace", str(tmp_path))
    assert p.returncode == 2 and "--timeout run: 'soon' is not a number of seconds" in p.stderr, p.stderr


def test_a_rerun_of_a_session_that_ran_no_version_says_so():
    """New-user trial 29, F14: ``ktui replay SESSION --rerun`` of a session that never ran a version (an agent session
    that never reached its model) read "0 version(s); recorded on ?, re-run on ?", its question marks like an error."""
    rep = rr.RerunReport("20261206-192835", "log", 0.1, {}, {}, [], [], [])
    assert rr.lines(rep) == ["session 20261206-192835: no version was run in it, so nothing to re-run"]
