"""Reading recorded sessions: the log reader and the replay fold never raise on any file (hypothesis), the fold is
the same whether run at once or one record at a time, and ``ktui sessions`` / ``ktui export`` report what a
hand-written log holds (the verified speedup, the verdicts, the diffs)."""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktui.agent.events import (
    AgentState,
    ApprovalDecided,
    ApprovalRequest,
    ChatDelta,
    ChatMessage,
    ChatReplyDone,
    ToolCall,
)
from ktui.cli import main
from ktui.core.events import Event, LadderFinished, LadderStarted, Notice, QueueChanged, RungFinished
from ktui.core.report import verdict
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.sessions.catalog import catalog, find_session, load
from ktui.sessions.export import ATIF_VERSION, EXPORT_SCHEMA_VERSION, markdown, trajectory
from ktui.sessions.fold import ReplayState, decode, fold, scan, step, timeline
from ktui.sessions.log import LOG_NAME, Record, envelope, read_log

from .jsonout import data_of

T0 = 1796150000.0
SID = "20261201-195754-a1b2"
CUDA = {"type": "cuda", "name": "NVIDIA H200", "capability": [9, 0]}

V1 = "import triton\n\n\ndef custom_kernel(data):\n    x = data\n    return x.softmax(-1)\n"
V2A = "import triton\n\n\ndef custom_kernel(data):\n    x = data * 1.0\n    return x.exp() / x.exp().sum(-1)\n"
V2B = (
    "import triton\n\n\ndef custom_kernel(data):\n    x = data * 1.0\n"
    "    y = (x - x.amax(-1, keepdim=True)).exp()\n    return y / y.sum(-1, keepdim=True)\n"
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def ladder(version: str, source: str, *, correct: bool = True, speedup: float | None = None, cancel: bool = False):
    """A LadderResult of softmax/<version> on the H200: correctness ok or failed, a benchmark with one spec at
    ``speedup`` (reference 30 µs), or a run cancelled during correctness."""
    rungs = [RungResult("compile", Status.OK, 0.5, "triton: softmax_kernel"), RungResult("run", Status.OK, 0.2)]
    if cancel:
        err = ErrorInfo("RunCancelled", "cancelled: a newer save of kernels/softmax/v3.py")
        rungs.append(RungResult("correctness", Status.FAILED, 0.1, error=err))
    else:
        corr = RungResult(
            "correctness",
            Status.OK if correct else Status.FAILED,
            1.0,
            "worst=(4, 4099) max_abs_err=2e-07" if correct else "spec=(4, 4099) seed=7: max_abs_err=0.5",
            error=None if correct else ErrorInfo("AssertionError", "spec=(4, 4099) seed=7: max_abs_err=0.5"),
        )
        rungs.append(corr)
        if speedup is not None:
            spec = {"label": "(4, 4099)", "median_us": 30.0 / speedup, "ref_median_us": 30.0, "speedup": speedup}
            rungs.append(RungResult("benchmark", Status.OK, 2.0, f"{speedup:.2f}x", figures={"specs": [spec]}))
    return LadderResult(
        "softmax", version, f"kernels/softmax/{version}.py", CUDA, rungs, source_sha256=sha(source), seconds=3.5
    )


def ev(e: Event) -> tuple[str, dict[str, Any]]:
    d = e.to_json()
    return d.pop("event"), d


def source(path: str, text: str) -> tuple[str, dict[str, Any]]:
    return "source", {"path": path, "sha256": sha(text), "bytes": len(text.encode()), "role": "kernel"}


def entries() -> list[tuple[str, dict[str, Any]]]:
    """A short session: a user asks, the model writes v2 (approved), v1 runs (1.20x, correct), v2 runs fast but
    wrong (3.00x, correctness failed), v2 is fixed and runs (1.50x, correct), a run of v3 is cancelled."""
    at = iter(T0 + i for i in range(1, 100))
    return [
        (
            "session",
            {
                "ktui_version": "0.9.0",
                "ktui_commit": "e073ae9abcdef",
                "model": "scripted/test-model",
                "device": CUDA,
                "started": T0,
                "env": ["KTUI_MODEL", "OPENAI_API_KEY"],
            },
        ),
        ev(ChatMessage(role="user", text="make softmax faster", at=next(at))),
        ev(AgentState(state="thinking", detail="scripted/test-model", at=next(at))),
        ev(ChatDelta(text="I'll ", at=next(at))),
        ev(ChatReplyDone("I'll write v2.", 100, 20, 0.001, 120, 0.001, at=next(at))),
        ev(ToolCall("c1", "write_kernel", "kernels/softmax/v2.py", "running", at=next(at))),
        ev(
            ApprovalRequest(
                1, "kernels/softmax/v2.py", "--- a\n+++ b\n", True, "kernels/softmax/v1.py", 2, 1, at=next(at)
            )
        ),
        ev(ApprovalDecided(1, True, at=next(at))),
        ev(ToolCall("c1", "write_kernel", "kernels/softmax/v2.py", "done", "wrote v2", at=next(at))),
        source("kernels/softmax/v1.py", V1),
        ev(QueueChanged("softmax/v1", None, ("softmax/v2",), at=next(at))),
        ev(LadderStarted("softmax/v1", 1, sha(V1), ("compile", "run", "correctness", "benchmark"), at=next(at))),
        ev(RungFinished("softmax/v1", 1, RungResult("compile", Status.OK, 0.5), at=next(at))),
        ev(LadderFinished("softmax/v1", 1, ladder("v1", V1, speedup=1.2), at=next(at))),
        source("kernels/softmax/v2.py", V2A),
        ev(LadderFinished("softmax/v2", 2, ladder("v2", V2A, correct=False, speedup=3.0), at=next(at))),
        ev(
            ChatMessage(role="results", text="Ladder results for softmax/v2: FAILED\n[correctness] FAILED", at=next(at))
        ),
        source("kernels/softmax/v2.py", V2A),  # the same content seen again: not an edit
        source("kernels/softmax/v2.py", V2B),
        ev(LadderFinished("softmax/v2", 3, ladder("v2", V2B, speedup=1.5), at=next(at))),
        ev(LadderFinished("softmax/v3", 4, ladder("v3", V1, cancel=True), at=next(at))),
        ev(Notice(level="info", message="softmax/v3: cancelled", at=next(at))),
        ev(ChatReplyDone("v2 is 1.50x and correct.", 300, 30, 0.002, 450, 0.003, at=next(at))),
        ("end", {"reason": "quit"}),
    ]


def log_lines(items: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [json.dumps(envelope(i, T0 + i, t, d)) for i, (t, d) in enumerate(items)]


def write_session(root: Path, sid: str = SID, lines: list[str] | None = None, blobs: bool = True) -> Path:
    d = root / "sessions" / sid
    (d / "blobs").mkdir(parents=True)
    (d / LOG_NAME).write_text("\n".join(lines if lines is not None else log_lines(entries())) + "\n")
    if blobs:
        for text in (V1, V2A, V2B):
            (d / "blobs" / sha(text)).write_text(text)
    return d


def records() -> list[Record]:
    return [Record(i + 1, i, T0 + i, t, d) for i, (t, d) in enumerate(entries())]


# -- the fold --------------------------------------------------------------------------------------------------------
def test_fold_state_at_each_record_equals_the_state_built_one_step_at_a_time():
    recs = records()
    states = scan(recs)
    s = ReplayState()
    for n in range(len(recs) + 1):
        assert fold(recs[:n]) == states[n] == s, n
        assert states[n].count == n
        if n < len(recs):
            s = step(s, recs[n])
    assert fold(recs) == fold(recs)  # pure: the same records give the same state
    # and what the state says, at the points where it changes
    at = {i: states[i + 1] for i in range(len(recs))}
    assert "softmax/v1" not in at[12].results and at[13].results["softmax/v1"].ok
    assert at[13].runs[-1].verdict == "✓ 1.20x" and at[13].runs[-1].verified_speedup == 1.2
    assert at[15].runs[-1].verdict == "✗ correctness"
    assert at[15].runs[-1].speedup == 3.0 and at[15].runs[-1].verified_speedup is None
    assert at[15].best.key == "softmax/v1"
    final = states[-1]
    assert [r.verdict for r in final.history["softmax/v2"]] == ["✗ correctness", "✓ 1.50x"]
    assert final.best.key == "softmax/v2" and final.best.verified_speedup == 1.5
    assert [c.key for c in final.cancels] == ["softmax/v3"] and "softmax/v3" not in final.results
    assert final.cancels[0].rung == "correctness"
    assert [(e.path, e.sha256) for e in final.edits] == [
        ("kernels/softmax/v1.py", sha(V1)),
        ("kernels/softmax/v2.py", sha(V2A)),
        ("kernels/softmax/v2.py", sha(V2B)),
    ]
    assert final.edits[2].previous == sha(V2A)
    roles = [e.role for e in final.chat]
    assert roles == ["user", "assistant", "tool", "approval", "decision", "results", "assistant"]
    tool = final.chat[2].event
    assert tool.state == "done" and tool.detail == "wrote v2" and final.chat[2].index == 5
    assert final.cost == pytest.approx(0.003) and final.session_cost_usd == 0.003
    assert (final.prompt_tokens, final.completion_tokens, final.session_tokens) == (400, 50, 450)
    assert at[3].streaming == "I'll " and at[4].streaming == ""
    assert at[10].queue.running == "softmax/v1" and at[12].live["softmax/v1"].finished[0].name == "compile"
    assert "softmax/v1" not in at[13].live
    assert final.ended and final.end_reason == "quit" and final.skipped == 0 and final.problems == ()
    assert final.model == "scripted/test-model" and final.device["name"] == "NVIDIA H200"
    assert [n.message for n in final.notices] == ["softmax/v3: cancelled"]


def test_timeline_indexes_results_messages_and_edits():
    tl = timeline(records())
    assert tl.results == (13, 15, 19)
    assert tl.messages == (1, 4, 16, 22)
    assert tl.edits == (9, 14, 18)
    assert tl.cancels == (20,)
    assert [(v.key, v.verdict) for v in tl.versions] == [
        ("softmax/v1", "✓ 1.20x"),
        ("softmax/v2", "✗ correctness"),
        ("softmax/v2", "✓ 1.50x"),
    ]
    assert tl.next("results", 13) == 15 and tl.previous("results", 13) is None
    assert tl.next("edits", 18) is None and tl.previous("messages", 16) == 4
    with pytest.raises(ValueError, match="unknown timeline kind"):
        tl.next("bogus", 0)


def test_decode_rebuilds_every_event_and_never_raises():
    for r in records():
        e = decode(r)
        if r.type in ("session", "source", "end"):
            assert e is None
        else:
            assert e is not None and e.kind == r.type
            assert {k: v for k, v in e.to_json().items() if k != "event"} == r.data
    assert decode(Record(1, 0, T0, "NoSuchEvent", {})) is None
    assert decode(Record(1, 0, T0, "LadderFinished", {"key": 1, "run_id": "x", "result": {"rungs": 5}})) is None
    no_at = decode(Record(1, 0, 123.0, "Notice", {"level": "info", "message": "m"}))
    assert no_at is not None and no_at.at == 123.0  # the record's time, never the clock's


def test_fold_skips_what_it_cannot_use_with_line_numbers():
    recs = [
        *records()[:3],
        Record(40, 3, T0, "NoSuchEvent", {"x": 1}),
        Record(41, 4, T0, "LadderFinished", {"key": "softmax/v9", "run_id": 1, "result": "not a result"}),
        Record(42, 5, T0, "source", {"path": 3}),
        Record(43, 6, T0, "ToolCall", {"call_id": "c", "name": "n", "summary": "s", "state": "done", "detail": 7}),
    ]
    s = fold(recs)
    assert s.skipped == 4, s.problems
    assert s.problems[0] == "line 40: NoSuchEvent record skipped: unknown event kind"
    assert s.problems[1] == "line 41: LadderFinished record skipped: its field result is str, not LadderResult"
    assert s.problems[2] == "line 42: source record skipped: a source record without a path and a sha256"
    assert s.problems[3] == "line 43: ToolCall record skipped: its field detail is int, not str"
    assert s.results == {} and s.count == len(recs)


# -- fuzzing the reader and the fold ----------------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
BASE = log_lines(entries())
RECORDS = records()
KINDS = sorted(Event.kinds()) + ["session", "source", "end", "device"]


@st.composite
def mangled(draw: st.DrawFn) -> bytes:
    """A log made from the hand-written one: lines reordered, duplicated, dropped, replaced by random JSON values
    or by envelopes of any kind with random data or one field of real data replaced; bytes garbled; the end cut."""
    lines = list(BASE)
    rnd = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["swap", "dup", "drop", "json", "envelope", "field"]))
        i = rnd.randrange(len(lines)) if lines else 0
        if op == "swap" and len(lines) > 1:
            j = rnd.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "dup" and lines:
            lines.insert(rnd.randrange(len(lines) + 1), lines[i])
        elif op == "drop" and lines:
            del lines[i]
        elif op == "json":
            lines.insert(i, json.dumps(draw(JSON)))
        elif op == "envelope":
            data = draw(st.dictionaries(st.text(max_size=10), JSON, max_size=5))
            lines.insert(i, json.dumps(envelope(draw(st.integers(0, 40)), T0, draw(st.sampled_from(KINDS)), data)))
        elif op == "field" and lines:
            try:
                obj = json.loads(lines[i])
                if isinstance(obj, dict) and isinstance(obj.get("data"), dict) and obj["data"]:
                    key = rnd.choice(sorted(obj["data"]))
                    obj["data"][key] = draw(JSON)
                    lines[i] = json.dumps(obj)
            except ValueError:
                pass
    raw = bytearray(("\n".join(lines) + "\n").encode())
    for _ in range(draw(st.integers(0, 3))):
        if raw:
            at = rnd.randrange(len(raw))
            raw[at : at + rnd.randint(1, 12)] = draw(st.binary(min_size=0, max_size=12))
    if draw(st.booleans()) and raw:
        raw = raw[: rnd.randrange(len(raw) + 1)]
    return bytes(raw)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_fuzzed_logs_read_and_fold_without_raising(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / LOG_NAME
    path.write_bytes(raw)
    log = read_log(path)
    nlines = raw.decode("utf-8", errors="replace").count("\n") + 1
    for p in log.problems:
        assert 0 <= p.line <= nlines, p
        assert p.line >= 1 or p.kind == "unreadable", p  # every problem in a line says which
        if p.kind in ("corrupt", "truncated", "schema", "order") and p.line:
            assert str(p).startswith(f"line {p.line}: ")
    assert all(1 <= r.line <= nlines for r in log.records)
    s = fold(log.records)
    assert s.count == len(log.records)
    assert s.skipped == len(s.problems)
    assert all(p.startswith("line ") for p in s.problems)  # every skipped record names its line
    assert s == scan(log.records)[-1]
    timeline(log.records)


@settings(max_examples=150, deadline=None, database=None)
@given(st.sampled_from(KINDS), st.dictionaries(st.text(max_size=10), JSON, max_size=6), st.data())
def test_any_record_of_any_kind_folds_without_raising(kind, data, draw):
    """A record of any kind with random data, or a real record with one field replaced by a random JSON value."""
    real = [r for r in RECORDS if r.data]
    if draw.draw(st.booleans()):
        base = draw.draw(st.sampled_from(real))
        key = draw.draw(st.sampled_from(sorted(base.data)))
        rec = Record(99, base.seq, base.t, base.type, {**base.data, key: draw.draw(JSON)})
    else:
        rec = Record(99, 0, T0, kind, data)
    s = fold([*RECORDS[:8], rec])
    assert s.count == 9 and s.skipped == len(s.problems) <= 1
    assert all(p.startswith("line 99: ") for p in s.problems)
    e = decode(rec)
    assert e is None or e.kind == rec.type


def test_a_corrupt_middle_line_is_reported_and_the_rest_replays(tmp_path):
    lines = log_lines(entries())
    lines[13] = lines[13][:40] + "\x00garbage"
    d = write_session(tmp_path, lines=lines)
    log = read_log(d)
    assert [(p.kind, p.line) for p in log.problems] == [("corrupt", 14), ("order", 15)]
    s = fold(log.records)
    assert "softmax/v1" not in s.results and s.results["softmax/v2"].rung("benchmark") is not None
    assert s.best.key == "softmax/v2"


# -- ktui sessions / ktui export ---------------------------------------------------------------------------------
def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_sessions_json_has_the_verified_best_speedup_and_the_figures(tmp_path, capsys):
    write_session(tmp_path)
    cut = log_lines(entries())[:-1]
    cut.insert(3, "{not json")
    write_session(tmp_path, "20261201-210000-ffff", lines=cut)
    code, out, err = run_cli(capsys, "sessions", "--workspace", str(tmp_path), "--json")
    assert code == 0, err
    rows = data_of(out, "sessions")["sessions"]
    assert [r["id"] for r in rows] == [SID, "20261201-210000-ffff"]
    r = rows[0]
    assert r["best"] == {"key": "softmax/v2", "speedup": 1.5}  # not v2's 3.00x: its correctness failed
    assert (r["versions"], r["runs"], r["problems"], r["verified"]) == (2, 3, ["softmax"], 2)
    assert r["device"] == "NVIDIA H200" and r["model"] == "scripted/test-model"
    assert r["cost_usd"] == pytest.approx(0.003) and r["log_problems"] == 0 and r["ended"] is True
    assert r["start"] == T0 and r["start_iso"] == "2026-12-01T18:33:20Z"
    assert r["duration_s"] == len(entries()) - 1
    assert rows[1]["ended"] is False and rows[1]["log_problems"] == 1  # the corrupt line
    code, out, _ = run_cli(capsys, "sessions", "--workspace", str(tmp_path))
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["ID", "START", "(UTC)"]
    assert lines[1].startswith(SID) and "1.50x softmax/v2" in lines[1] and "$0.0030" in lines[1]
    assert "(cut short)" in lines[2] and lines[2].endswith("1 problem")
    assert lines[-1] == "2 sessions"


def test_a_session_whose_ktui_is_alive_reads_as_running_not_cut_short(tmp_path, capsys):
    """New-user trial 21 F17: an open TUI's session was listed "(cut short)", as a crashed one is. Without an end
    record, a session whose writing process (the last session record's pid) is a live ktui reads "(running)"."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "ktui"])
    try:
        items = entries()[:-1]  # no end record
        items[0] = ("session", {**items[0][1], "pid": proc.pid})
        write_session(tmp_path, lines=log_lines(items))
        code, out, _ = run_cli(capsys, "sessions", "--workspace", str(tmp_path), "--json")
        listed = data_of(out, "sessions")["sessions"][0]
        assert code == 0 and listed["running"] is True, out
        # its duration is the wall time so far, not to its last record (new-user trial 22 F2)
        assert listed["duration_s"] >= time.time() - T0 - 5, (listed, T0)
        code, out, _ = run_cli(capsys, "sessions", "--workspace", str(tmp_path))
        assert "(running)" in out.splitlines()[1] and "(cut short)" not in out, out
    finally:
        proc.kill()
        proc.wait()
    code, out, _ = run_cli(capsys, "sessions", "--workspace", str(tmp_path))
    assert "(cut short)" in out.splitlines()[1], out  # its process gone: cut short


def test_a_cpu_sessions_best_says_how_many_versions_were_verified():
    """New-user trial 20 L13: BEST was '-' for every CPU session (no times), verified versions or none."""
    from ktui.sessions.catalog import SessionRow, table

    def row(verified: int) -> SessionRow:
        return SessionRow("s1", T0, 60.0, True, ("softmax",), 2, 3, None, None, "cpu", "", None, 0, verified)

    assert "2 verified, no times" in table([row(2)])[1]
    assert "verified" not in table([row(0)])[1]


def test_export_md_has_verdicts_timings_diffs_chat_and_the_best(tmp_path, capsys):
    write_session(tmp_path)
    code, out, err = run_cli(capsys, "export", SID[:12], "--format", "md", "--workspace", str(tmp_path))
    assert code == 0, err
    assert out.startswith(f"# ktui session {SID}\n")
    assert "### 1. softmax/v1: ✓ 1.20x" in out
    assert "### 2. softmax/v2: ✗ correctness" in out
    assert "### 3. softmax/v2: ✓ 1.50x" in out
    assert "**softmax/v2** (kernels/softmax/v2.py, sha256 " in out and "worst speedup 1.50x" in out
    assert "| (4, 4099) | 20 | 30 | 1.50x |" in out  # 30 µs / 1.5
    assert "| correctness | FAILED | 1.00 | spec=(4, 4099) seed=7: max_abs_err=0.5 |" in out
    assert "Source: first version: 6 lines." in out
    assert "Source: new file, against kernels/softmax/v1.py as run in run 1: +2 -2." in out
    assert "Source: against run 2: +2 -1." in out
    assert "+    y = (x - x.amax(-1, keepdim=True)).exp()\n" in out
    assert "-    return x.exp() / x.exp().sum(-1)\n" in out
    assert "> make softmax faster" in out and "> v2 is 1.50x and correct." in out
    assert "- tool `write_kernel`(kernels/softmax/v2.py) done: wrote v2" in out
    assert "- approval 1: approved" in out
    assert "Problems reading the log" not in out


def test_export_json_is_an_atif_trajectory_with_ktuis_versions(tmp_path, capsys):
    write_session(tmp_path)
    (tmp_path / "sessions" / SID / "blobs" / sha(V2A)).write_text("tampered")
    dest = tmp_path / "out.json"
    code, _, err = run_cli(capsys, "export", SID, "--format", "json", "--out", str(dest), "--workspace", str(tmp_path))
    assert code == 0 and f"wrote {dest}" in err
    d = json.loads(dest.read_text())
    assert d["schema_version"] == ATIF_VERSION and d["session_id"] == SID
    assert d["agent"] == {"name": "ktui", "version": "0.9.0", "model_name": "scripted/test-model"}
    steps = d["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["source"] for s in steps] == ["user", "agent", "system", "system", "system", "system", "system", "agent"]
    agent = steps[1]
    assert agent["message"] == "I'll write v2." and agent["metrics"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cost_usd": 0.001,
    }
    assert agent["tool_calls"] == [
        {"tool_call_id": "c1", "function_name": "write_kernel", "arguments": {"summary": "kernels/softmax/v2.py"}}
    ]
    assert agent["observation"]["results"] == [{"source_call_id": "c1", "content": "done: wrote v2"}]
    assert [a.get("approved") for a in agent["extra"]["approvals"]] == [None, True]
    assert steps[2]["message"] == "ladder result softmax/v1: ✓ 1.20x"
    assert d["final_metrics"] == {
        "total_prompt_tokens": 400,
        "total_completion_tokens": 50,
        "total_cost_usd": pytest.approx(0.003),
        "total_steps": 8,
    }
    k = d["extra"]["ktui"]
    assert k["schema_version"] == EXPORT_SCHEMA_VERSION
    assert [(v["key"], v["verdict"], v["verified_speedup"]) for v in k["versions"]] == [
        ("softmax/v1", "✓ 1.20x", 1.2),
        ("softmax/v2", "✗ correctness", None),
        ("softmax/v2", "✓ 1.50x", 1.5),
    ]
    assert k["versions"][1]["speedup"] == 3.0 and k["versions"][0]["step_id"] == 3
    assert k["best"] == {"key": "softmax/v2", "speedup": 1.5, "version": 2}
    # v2's first source was tampered with: no diff uses it, and the export says so
    assert k["versions"][1]["diff"]["text"] == "" and "not recorded" in k["versions"][1]["diff"]["note"]
    assert any("does not match its hash" in p for p in k["problems"])
    assert k["versions"][0]["result"]["rungs"][0]["name"] == "compile"
    assert [e["path"] for e in k["edits"]] == ["kernels/softmax/v1.py", "kernels/softmax/v2.py"] * 1 + [
        "kernels/softmax/v2.py"
    ]


def test_export_of_a_bad_session_is_a_usage_error(tmp_path, capsys):
    write_session(tmp_path)
    write_session(tmp_path, "20261201-195754-ffff")
    code, _, err = run_cli(capsys, "export", "nosuch", "--workspace", str(tmp_path))
    assert code == 2 and "no session 'nosuch'" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "export", "20261201-1957", "--workspace", str(tmp_path))
    assert code == 2 and "matches 2 sessions" in err
    code, _, err = run_cli(capsys, "sessions", "--workspace", str(tmp_path / "nope"))
    assert code == 2 and "no such folder" in err
    # a path works too, from anywhere
    assert find_session(Path("/"), str(tmp_path / "sessions" / SID)) == tmp_path / "sessions" / SID
    assert load(tmp_path / "sessions" / SID / LOG_NAME).state.best.key == "softmax/v2"


def test_catalog_of_a_workspace_without_sessions_is_empty(tmp_path, capsys):
    assert catalog(tmp_path) == []
    code, out, _ = run_cli(capsys, "sessions", "--workspace", str(tmp_path))
    assert code == 0 and out.startswith("no recorded sessions")


def test_markdown_and_trajectory_of_an_unreadable_log_say_so(tmp_path):
    d = tmp_path / "sessions" / SID
    d.mkdir(parents=True)
    (d / LOG_NAME).write_bytes(b'\xff\xfe garbage\n{"v": 1}\n')
    s = load(d)
    md = markdown(s)
    assert "No ladder run finished" in md and "## Problems reading the log" in md and "- line 1: " in md
    t = trajectory(s)
    assert t["steps"] == [] and len(t["extra"]["ktui"]["problems"]) == 3


# -- a real recorded run -----------------------------------------------------------------------------------------
def test_a_recorded_ktui_run_folds_to_the_result_it_printed(make_ws, capsys):
    """``ktui run`` records its session (``ktui.sessions.record``); folding that log gives the very LadderResult
    the run printed with ``--json``, its source is in the blobs, and the catalogue and the export read it."""
    from .test_cli import ktui

    ws = make_ws(["vector_add"])
    p = ktui(
        "run",
        str(ws.root / "kernels/vector_add/v1.py"),
        *("--json", "--device", "cpu", "--seed", "3", "--seeds", "1", "--rungs", "correctness"),
    )
    assert p.returncode in (0, 1), p.stderr  # (the verdict is the ladder's business; the log must match it)
    printed = data_of(p.stdout, "run", p.returncode)
    assert printed["ok"] is (p.returncode == 0)
    (folder,) = (ws.root / "sessions").iterdir()
    assert f"ktui: recording session {folder.name}" in p.stderr
    session = load(folder)
    assert session.log.problems == [] and session.log.ended
    s = session.state
    assert s.skipped == 0, s.problems
    assert s.results["vector_add/v1"].to_json() == printed
    (run,) = s.runs
    assert run.verdict == verdict(LadderResult.from_json(printed))[0]
    assert run.speedup is None and run.timings == ()  # no timing on the CPU
    corr = next((r for r in printed["rungs"] if r["name"] == "correctness"), None)
    assert run.correct is (None if corr is None or corr["status"] == "skipped" else corr["status"] == "ok")
    src = (ws.root / "kernels/vector_add/v1.py").read_bytes()
    assert run.source_sha256 == hashlib.sha256(src).hexdigest()
    assert (session.blobs / run.source_sha256).read_bytes() == src
    assert ("kernels/vector_add/v1.py", run.source_sha256) in [(e.path, e.sha256) for e in s.edits]
    code, out, _ = run_cli(capsys, "sessions", "--workspace", str(ws.root), "--json")
    (row,) = data_of(out, "sessions")["sessions"]
    assert (row["id"], row["versions"], row["best"], row["device"]) == (folder.name, 1, None, "cpu (interpreter)")
    code, out, _ = run_cli(capsys, "export", folder.name, "--workspace", str(ws.root))
    assert code == 0 and f"### 1. vector_add/v1: {run.verdict}" in out and "Source: first version: " in out


def test_a_redacted_source_is_found_by_its_original_hash(tmp_path):
    """The recorder keeps a source holding a secret's value under the redacted content's hash and names the
    original hash in its record (``original_sha256``): the export's diffs still find it by the hash results carry."""
    items = entries()
    redacted = V2B.replace("1.0", "[redacted OPENAI_API_KEY]")
    i = next(n for n, (t, d) in enumerate(items) if t == "source" and d["sha256"] == sha(V2B))
    items[i] = ("source", {**items[i][1], "sha256": sha(redacted), "original_sha256": sha(V2B)})
    d = write_session(tmp_path, lines=log_lines(items))
    (d / "blobs" / sha(V2B)).unlink()
    (d / "blobs" / sha(redacted)).write_text(redacted)
    md = markdown(load(d))
    assert "+    x = data * [redacted OPENAI_API_KEY]\n" in md and "Source: against run 2: +3 -2." in md
    assert "Problems reading the log" not in md


def test_a_copys_run_reads_as_its_source_versions_run_in_the_export():
    """New-user trial 20 L5: ``n`` copied v1 to v2, and the export listed v2 with v1's 61.6 s as a run of its own."""
    from ktui.core.results import LadderResult, RungResult, Status
    from ktui.sessions.export import VersionDiff, _version_md
    from ktui.sessions.fold import VersionRun

    ran = LadderResult(
        "rowcumsum", "v1", "kernels/rowcumsum/v1.py", {"type": "cpu"}, [RungResult("run", Status.OK, 1.0)]
    )
    ran.seconds = 61.6
    copy = ran.carried("v2", "kernels/rowcumsum/v2.py")
    run = VersionRun(1, 1, T0, "rowcumsum/v2", 0, copy, "✓ ok", True, None, None, None, 61.6, "ab" * 32, "cpu")
    text = "\n".join(_version_md(1, run, VersionDiff("", "", "", "first version")))
    assert "### 1. rowcumsum/v2: ✓ ok (the run of v1, copied: no run of its own)" in text
    assert "61.6 s when v1 ran" in text
