"""Resuming a recorded session (issue 12, ``ktui --resume`` / ``ktui agent --resume``): the model gets the earlier
chat back, exactly as the live agent kept it and trimmed as it trims; new events append to the same log with the
numbering going on after a ``resumed`` record; ``ktui sessions`` still lists one session and the fold of the whole
log holds both runs; recorded sources missing or changed in the workspace are reported and never overwritten; and
the errors: no such session, an ambiguous prefix, another workspace, a damaged log, a log being recorded now.

Every workspace is a temporary folder; the model is the scripted one (tests/scripted_llm.py, litellm's own code
runs); no worker starts except in the one end-to-end test of the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ktui.agent.agent import Agent, trim
from ktui.agent.config import AgentConfig
from ktui.agent.events import ChatMessage, ChatReplyDone, ModelToolCall, ToolCall, ToolResult
from ktui.core.events import Event, EventBus, FileChanged
from ktui.sessions.catalog import SessionError, catalog
from ktui.sessions.fold import ChatEntry, fold
from ktui.sessions.log import LOG_NAME, Record, read_log
from ktui.sessions.record import Recorder
from ktui.sessions.resume import NO_RESULT, check_versions, history_of, prepare

from .conftest import ROOT
from .jsonout import data_of
from .scripted_llm import Call, Reply, ScriptedLLM

V2 = (ROOT / "kernels/vector_add/v2.py").read_text()


def converse(ws, script, messages, *, resume=None, context_tokens=32768, session_id=None, after=None):
    """One recorded chat session in-process: a Recorder (appending to ``resume``'s log when given) on a bus, an
    Agent on the scripted model (``resume`` applied to it), each message sent in turn; ``after(bus)`` runs
    before the recorder closes. Returns (recorder, scripted server, agent)."""
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    bus = EventBus()
    rec = Recorder(
        ws,
        "agent",
        ["ktui", "agent"],
        model="openai/scripted",
        session_id=session_id,
        resume_dir=resume.folder if resume is not None else None,
    )
    bus.subscribe(rec)
    with ScriptedLLM(script) as llm:
        config = AgentConfig(
            model="openai/scripted",
            api_base=llm.api_base,
            approve="auto",
            max_rounds=0,
            timeout_s=10.0,
            context_tokens=context_tokens,
        )
        agent = Agent(ws, config, bus, run_ladder=lambda k: pytest.fail("no ladder expected"))
        if resume is not None:
            resume.apply(agent)
        for m in messages:
            agent.send(m, "vector_add")
        if after is not None:
            after(bus)
    rec.close()
    return rec, llm, agent


FIRST = [
    Reply(
        "Writing v4 and reading the reference.",
        tool_calls=[
            Call("write_kernel", {"problem": "vector_add", "source": V2}),
            Call("read_file", {"path": "references/vector_add.py"}),
        ],
    ),
    Reply("v4 is written; run it when you like."),
]


# -- the model gets the earlier chat back --------------------------------------------------------------------------
def test_resume_gives_the_model_the_earlier_chat_and_appends_to_the_same_log(make_ws):
    ws = make_ws(["vector_add"])
    rec1, llm1, agent1 = converse(ws, list(FIRST), ["make it faster"])
    assert len(llm1.requests) == 2
    first_end = read_log(rec1.dir).records[-1]
    assert first_end.type == "end" and first_end.data["reason"] == "done"

    plan = prepare(ws.root, rec1.id[:15])  # a unique prefix, as `ktui replay` takes it
    assert plan.id == rec1.id and plan.folder == rec1.dir.resolve()
    assert plan.history == agent1.history  # the live agent's own history, message for message
    rec2, llm2, agent2 = converse(ws, [Reply("Resumed: trying BLOCK=2048 next.")], ["and now?"], resume=plan)

    # what the scripted model received: the earlier chat, then the new message
    sent = llm2.requests[0]["messages"]
    assert sent[0]["role"] == "system"
    assert sent[1] == {"role": "user", "content": "make it faster"}
    assert sent[2]["role"] == "assistant" and sent[2]["content"] == "Writing v4 and reading the reference."
    calls = sent[2]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["write_kernel", "read_file"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"problem": "vector_add", "source": V2}
    assert json.loads(calls[1]["function"]["arguments"]) == {"path": "references/vector_add.py"}
    assert sent[3] == {
        "role": "tool",
        "tool_call_id": calls[0]["id"],
        "content": "wrote kernels/vector_add/v4.py; the ladder runs it and its results come back when you end your "
        "turn",
    }
    assert sent[4]["role"] == "tool" and sent[4]["tool_call_id"] == calls[1]["id"]
    assert sent[4]["content"] == (ws.root / "references/vector_add.py").read_text()
    assert sent[5] == {"role": "assistant", "content": "v4 is written; run it when you like."}
    assert sent[6] == {"role": "user", "content": "and now?"} and len(sent) == 7
    # exactly what the live session would have sent next: its last request's messages and its last reply
    assert sent[1:6] == llm1.requests[1]["messages"][1:] + [sent[5]]
    assert agent2.session_tokens == agent1.session_tokens + 120  # the tokens go on from the recorded figure

    # one session, one log: the numbering goes on after a resumed record; the earlier end stays in the middle
    assert rec2.id == rec1.id and rec2.dir == rec1.dir
    assert sorted(p.name for p in (ws.root / "sessions").iterdir()) == [rec1.id]
    log = read_log(rec1.dir)
    assert log.problems == [] and [r.seq for r in log.records] == list(range(len(log.records)))
    kinds = [r.type for r in log.records]
    assert kinds.count("session") == 1 and kinds.count("resumed") == 1 and kinds.count("end") == 2
    at = kinds.index("resumed")
    resumed = log.records[at]
    assert log.records[at - 1].seq == first_end.seq and resumed.seq == first_end.seq + 1
    assert resumed.data["after_seq"] == first_end.seq and resumed.data["previous_end"] == "done"
    assert resumed.data["id"] == rec1.id and resumed.data["pid"] == os.getpid()
    assert resumed.data["workspace"] == str(ws.root) and resumed.data["dropped_bytes"] == 0
    assert kinds[-1] == "end" and log.ended
    (row,) = catalog(ws.root)
    assert row.id == rec1.id and row.ended and row.log_problems == 0

    # the fold of the whole log holds both runs
    state = fold(log.records)
    assert state.ended and state.end_reason == "done" and state.skipped == 0 and state.resumes == (at,)
    users = [e.event.text for e in state.chat if isinstance(e.event, ChatMessage)]
    replies = [e.event.text for e in state.chat if isinstance(e.event, ChatReplyDone)]
    assert users == ["make it faster", "and now?"]
    assert replies == [
        "Writing v4 and reading the reference.",
        "v4 is written; run it when you like.",
        "Resumed: trying BLOCK=2048 next.",
    ]
    assert state.session_tokens == agent2.session_tokens

    # and resuming again gives back both runs' chat
    again = prepare(ws.root, rec1.id)
    assert (
        again.history
        == agent2.history
        == sent[1:] + [{"role": "assistant", "content": "Resumed: trying BLOCK=2048 next."}]
    )


def test_a_resumed_history_is_trimmed_as_the_live_agent_trims_it(make_ws):
    ws = make_ws(["vector_add"])
    long = ["tell me about block sizes " + "x" * 4000 + f" (question {i})" for i in range(4)]
    words = " ".join(f"w{j}" for j in range(400))  # (varied: litellm stops a stream that repeats one chunk)
    rec, _, agent1 = converse(ws, [Reply(f"answer {i} {words}", chunk=64) for i in range(4)], long)
    plan = prepare(ws.root, rec.id)
    assert plan.history == agent1.history and len(plan.history) == 8
    window = 8192 + 512 + 4000  # max_tokens + the reserve + a budget smaller than the history
    _, llm, _ = converse(ws, [Reply("ok")], ["the latest question"], resume=plan, context_tokens=window)
    sent = llm.requests[0]["messages"]
    expected = trim(sent[0], [*plan.history, {"role": "user", "content": "the latest question"}], 4000)
    assert sent == expected
    assert sent[1]["content"].endswith("earlier message groups were dropped to fit the context window.)")
    assert sent[-1] == {"role": "user", "content": "the latest question"}
    assert sent[-2]["content"].startswith("answer 3 ")  # the latest of the earlier chat is kept, the oldest dropped
    assert all("(question 0)" not in str(m["content"]) for m in sent)


def _rec(line: int, seq: int, type_: str, data: dict) -> Record:
    return Record(line=line, seq=seq, t=1.0 + seq, type=type_, data=data)


def _ev(line: int, seq: int, ev: Event) -> Record:
    d = ev.to_json()
    d.pop("event")
    return _rec(line, seq, ev.kind, d)


def test_history_gives_every_tool_call_a_result_and_notes_the_calls_of_older_logs():
    recs = [
        _rec(1, 0, "session", {"workspace": "/w"}),
        _ev(2, 1, ChatMessage(role="user", text="go")),
        _ev(3, 2, ChatReplyDone("two calls", 1, 1, None, 2, None)),
        _ev(4, 3, ModelToolCall(call_id="a", name="read_file", arguments='{"path": "x"}')),
        _ev(5, 4, ModelToolCall(call_id="b", name="list_files", arguments="{}")),
        _ev(6, 5, ToolResult(call_id="a", content="the file")),
        # killed here, while list_files ran: no result for "b"
        _rec(7, 6, "resumed", {"workspace": "/w"}),
        _ev(8, 7, ChatMessage(role="user", text="again")),
        # a reply of a ktui that recorded no ModelToolCall: its tool call becomes a note
        _ev(9, 8, ChatReplyDone("old style", 1, 1, None, 4, None)),
        _ev(10, 9, ToolCall(call_id="c", name="write_kernel", summary="vector_add/v5", state="running")),
        _ev(11, 10, ToolCall(call_id="c", name="write_kernel", summary="vector_add/v5", state="done", detail="wrote")),
        _ev(12, 11, ChatMessage(role="results", text="Ladder results for vector_add/v5 ...")),
    ]
    assert history_of(recs) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "two calls",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
                {"id": "b", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "the file"},
        {"role": "tool", "tool_call_id": "b", "content": NO_RESULT},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "old style\n[tool write_kernel(vector_add/v5): done wrote]"},
        {"role": "user", "content": "Ladder results for vector_add/v5 ..."},
    ]


# -- the log's reader and the fold across a resumption -------------------------------------------------------------
def test_the_reader_and_the_fold_treat_an_end_before_a_resumption_as_the_earlier_runs():
    recs = [
        _rec(1, 0, "session", {"workspace": "/w", "started": 1.0}),
        _ev(2, 1, ToolCall(call_id="call_1_0", name="read_file", summary="path='a'", state="running")),
        _ev(3, 2, ToolCall(call_id="call_1_0", name="read_file", summary="path='a'", state="done")),
        _rec(4, 3, "end", {"reason": "done"}),
        _rec(5, 4, "resumed", {"workspace": "/w", "device": {"type": "cpu", "interpreter": True}}),
        # a new process's model numbers its calls from 1 again: a new call, not the old one updated
        _ev(6, 5, ToolCall(call_id="call_1_0", name="list_files", summary="", state="running")),
        _ev(7, 6, ToolCall(call_id="call_1_0", name="list_files", summary="", state="error", detail="no")),
    ]
    mid = fold(recs[:4])
    assert mid.ended and mid.end_reason == "done"
    state = fold(recs)
    assert not state.ended and state.end_reason == "" and state.resumes == (4,) and state.skipped == 0
    assert state.device == {"type": "cpu", "interpreter": True}
    tools = [(e.event.name, e.event.state, e.index) for e in state.chat if isinstance(e, ChatEntry)]
    assert tools == [("read_file", "done", 1), ("list_files", "error", 5)]
    ended = fold([*recs, _rec(8, 7, "end", {"reason": "stopped by ctrl+c"})])
    assert ended.ended and ended.end_reason == "stopped by ctrl+c"


def test_the_log_reads_as_ended_only_when_an_end_follows_the_last_resumption(tmp_path):
    def log_of(*types: str):
        lines = [json.dumps({"v": 1, "seq": i, "t": 1.0, "type": t, "data": {}}) for i, t in enumerate(types)]
        p = tmp_path / f"{'-'.join(types)}.jsonl"
        p.write_text("\n".join(lines) + "\n")
        return read_log(p)

    assert log_of("session", "end").ended
    assert not log_of("session", "end", "resumed").ended
    assert not log_of("session", "end", "resumed", "Notice").ended
    assert log_of("session", "end", "resumed", "end").ended
    assert not log_of("session", "resumed").ended
    read = log_of("session", "end", "resumed", "end")
    assert read.problems == [] and [r.type for r in read.records] == ["session", "end", "resumed", "end"]


# -- the versions --------------------------------------------------------------------------------------------------
def test_sources_missing_or_changed_in_the_workspace_are_reported_and_never_overwritten(make_ws):
    ws = make_ws(["vector_add"])
    v1, v2 = ws.root / "kernels/vector_add/v1.py", ws.root / "kernels/vector_add/v2.py"
    v3 = ws.root / "kernels/vector_add/v3.py"

    def saves(bus: EventBus) -> None:
        for p in (v1, v2, v3, ws.root / "references/vector_add.py"):
            bus.publish(FileChanged(path=str(p)))

    rec, _, _ = converse(ws, [Reply("ok")], ["hello"], after=saves)
    recorded_v1 = v1.read_bytes()
    # since the session: the user edits v1 (two lines in, one out), deletes v3; v2 and the reference stay
    text = v1.read_text().splitlines(keepends=True)
    edited = "".join(["# mine\n", "# also mine\n", *text[1:]])
    v1.write_text(edited)
    v3.unlink()
    plan = prepare(ws.root, rec.id)
    assert plan.compared == 4
    by = {v.path: v for v in plan.versions}
    assert sorted(by) == ["kernels/vector_add/v1.py", "kernels/vector_add/v3.py"]
    d, m = by["kernels/vector_add/v1.py"], by["kernels/vector_add/v3.py"]
    assert (d.status, d.role, d.added, d.removed) == ("differs", "kernel", 2, 1)
    import hashlib

    assert d.sha256 == hashlib.sha256(recorded_v1).hexdigest()
    assert d.workspace_sha256 == hashlib.sha256(edited.encode()).hexdigest()
    assert d.line() == (
        f"kernels/vector_add/v1.py differs from the session's last recorded kernel source (+2 -1 lines since): the "
        f"workspace's content is kept; the session's is sessions/{rec.id}/blobs/{d.sha256}"
    )
    assert m.status == "missing" and m.line() == (
        f"kernels/vector_add/v3.py: missing from the workspace; the session's last kernel source is "
        f"sessions/{rec.id}/blobs/{m.sha256} (`cp sessions/{rec.id}/blobs/{m.sha256} kernels/vector_add/v3.py` "
        "brings it back)"
    )
    assert (ws.root / m.blob).read_text() == (ROOT / "kernels/vector_add/v3.py").read_text()
    lines = plan.lines()
    assert lines[1] == "its last run ended: done" and d.line() in lines and m.line() in lines
    # resuming writes nothing to the workspace: the user's edit stays, the deleted file stays deleted
    converse(ws, [Reply("ok")], ["go on"], resume=plan)
    assert v1.read_text() == edited and not v3.exists()
    assert prepare(ws.root, rec.id).versions == plan.versions
    # a log that names a path outside the workspace (made by hand) is not followed
    outside = [_rec(2, 1, "source", {"path": "../escape.py", "sha256": "ab" * 32, "role": "kernel"})]
    assert check_versions(ws.root, rec.dir, outside) == ([], 0)


def test_every_source_matching_is_said_in_one_line(make_ws):
    ws = make_ws(["vector_add"])
    v1 = ws.root / "kernels/vector_add/v1.py"
    rec, _, _ = converse(ws, [Reply("ok")], ["hello"], after=lambda bus: bus.publish(FileChanged(path=str(v1))))
    plan = prepare(ws.root, rec.id)
    assert plan.versions == [] and plan.lines()[-1] == "every recorded source matches the workspace (1 files)"


# -- errors --------------------------------------------------------------------------------------------------------
def test_an_unknown_session_and_an_ambiguous_prefix_are_errors_that_say_so(make_ws):
    ws = make_ws(["vector_add"])
    a = Recorder(ws, "tui", ["ktui"], session_id="20261201-120000-aaaa")
    b = Recorder(ws, "tui", ["ktui"], session_id="20261201-120000-bbbb")
    a.close()
    b.close()
    with pytest.raises(SessionError, match=r"no session 'nope' in .*sessions \(sessions: 20261201-120000-aaaa, "):
        prepare(ws.root, "nope")
    with pytest.raises(
        SessionError,
        match=r"'20261201-12' matches 2 sessions \(20261201-120000-aaaa, 20261201-120000-bbbb\): give more of the id",
    ):
        prepare(ws.root, "20261201-12")
    assert prepare(ws.root, "20261201-120000-b").id == "20261201-120000-bbbb"


def test_a_session_of_another_workspace_is_refused(make_ws):
    ws1 = make_ws(["vector_add"], name="one")
    ws2 = make_ws(["vector_add"], name="two")
    rec = Recorder(ws1, "tui", ["ktui"])
    rec.close()
    shutil.copytree(rec.dir, ws2.root / "sessions" / rec.id)
    with pytest.raises(SessionError) as err:
        prepare(ws2.root, rec.id)
    assert str(err.value) == (
        f"session {rec.id} was recorded in the workspace {ws1.root}, not in {ws2.root}: resume it there "
        f"(`ktui {ws1.root} --resume {rec.id}`)"
    )
    with pytest.raises(SessionError, match="was recorded in the workspace"):
        prepare(ws2.root, str(rec.dir))  # by its folder, from the other workspace
    assert prepare(ws1.root, str(rec.dir)).id == rec.id


def test_a_session_being_recorded_now_is_refused(make_ws):
    ws = make_ws(["vector_add"])
    live = Recorder(ws, "tui", ["ktui"])
    try:
        with pytest.raises(SessionError) as err:
            prepare(ws.root, live.id)
        assert str(err.value).startswith(f"session {live.id} is being recorded by another ktui process now")
    finally:
        live.close()
    assert prepare(ws.root, live.id).id == live.id  # once its writer is gone


def test_a_damaged_log_resumes_from_its_last_good_event_with_a_warning(make_ws):
    ws = make_ws(["vector_add"])
    rec, _, _ = converse(ws, [Reply("first answer")], ["first question"])
    path = rec.dir / LOG_NAME
    lines = path.read_text().splitlines(keepends=True)
    n = len(lines)
    # line 3 garbled in the middle, the end line gone, a partial last line (a SIGKILL mid-write)
    lines[2] = '{"v": 1, "seq": 2, "t": 1.0, "ty\n'
    path.write_text("".join(lines[:-1]) + '{"v": 1, "seq": 99, "t": 1.0, "type": "Not')
    plan = prepare(ws.root, rec.id)
    good = read_log(path).records[-1]
    (warning,) = plan.warnings
    assert warning.startswith("the log is damaged (line 3: not JSON (")
    assert "line 4: sequence number 3 after 1" in warning
    assert f"line {n}: the last line is incomplete (skipped): cut short" in warning
    assert warning.endswith(
        f"): the session resumes from its last good event (seq {good.seq}, line {good.line}); the damaged lines "
        "stay as they are"
    )
    assert plan.lines()[1] == "its last run was cut short (no end line)"
    assert plan.history == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
    ]
    _, llm, _ = converse(ws, [Reply("second answer")], ["second question"], resume=plan)
    assert llm.requests[0]["messages"][1:] == [*plan.history, {"role": "user", "content": "second question"}]
    log = read_log(path)
    # the partial line was cut off before appending; the corrupt one stays, named; everything after it reads
    assert [(p.kind, p.line) for p in log.problems] == [("corrupt", 3), ("order", 4)]  # (seq 2 was on line 3)
    resumed = next(r for r in log.records if r.type == "resumed")
    assert resumed.seq == good.seq + 1 and resumed.data["previous_end"] is None
    assert resumed.data["dropped_bytes"] == len('{"v": 1, "seq": 99, "t": 1.0, "type": "Not')
    seqs = [r.seq for r in log.records]
    assert seqs == sorted(seqs) and seqs[-1] == len(seqs)  # (one seq, line 3's, is lost)
    state = fold(log.records)
    assert [e.event.text for e in state.chat if isinstance(e.event, ChatReplyDone)] == [
        "first answer",
        "second answer",
    ]
    assert state.ended and log.ended


def test_a_last_record_whose_newline_was_not_written_is_kept(make_ws):
    ws = make_ws(["vector_add"])
    rec, _, _ = converse(ws, [Reply("first answer")], ["first question"])
    path = rec.dir / LOG_NAME
    path.write_bytes(path.read_bytes()[:-1])  # killed between the end record's JSON and its newline
    end = read_log(path).records[-1]
    assert end.type == "end"
    converse(ws, [Reply("second answer")], ["second question"], resume=prepare(ws.root, rec.id))
    log = read_log(path)
    assert log.problems == [] and [r.seq for r in log.records] == list(range(len(log.records)))
    resumed = next(r for r in log.records if r.type == "resumed")
    assert resumed.seq == end.seq + 1 and resumed.line == end.line + 1
    assert resumed.data["previous_end"] == "done" and resumed.data["dropped_bytes"] == 0


def test_a_log_with_no_readable_record_cannot_be_resumed(make_ws):
    ws = make_ws(["vector_add"])
    d = ws.root / "sessions" / "20261201-120000-cccc"
    d.mkdir(parents=True)
    (d / LOG_NAME).write_text("not json\n")
    with pytest.raises(SessionError) as err:
        prepare(ws.root, "20261201-120000-cccc")
    assert str(err.value) == (
        f"cannot resume 20261201-120000-cccc: {(d / LOG_NAME).resolve()} holds no readable record (line 1: not "
        "JSON (Expecting value: line 1 column 1 (char 0)); skipped; line 1: no session record on the first line: "
        "metadata unknown)"
    )


# -- the real CLI --------------------------------------------------------------------------------------------------
def _ktui(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ktui", *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def _cli_env(api_base: str = "http://127.0.0.1:9/v1") -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "scripted", "KTUI_API_BASE": api_base, "KTUI_FORCE_CPU": "1"}
    env.pop("KTUI_MODEL", None)
    return env


def test_ktui_agent_resume_end_to_end(make_ws):
    """``ktui agent ... `` then ``ktui agent --resume PREFIX -m ...`` (PROBLEM taken from the session): the
    second model request holds the first run's chat; stderr says which session and what it found; ``ktui sessions
    --json`` lists one session, ended."""
    ws = make_ws(["vector_add"])
    common = ["--model", "openai/scripted", "--yes", "--max-rounds", "0", "--workspace", str(ws.root)]
    with ScriptedLLM(list(FIRST)) as llm1:
        p1 = _ktui(
            "agent", "vector_add", "-m", "make it faster", *common, "--device", "cpu", env=_cli_env(llm1.api_base)
        )
    assert p1.returncode == 0, p1.stdout + p1.stderr
    (folder,) = (ws.root / "sessions").iterdir()
    sid = folder.name
    with ScriptedLLM([Reply("Picking up where we left off.")]) as llm2:
        p2 = _ktui(
            "agent", "--resume", sid[:15], "-m", "and now?", *common, "--device", "cpu", env=_cli_env(llm2.api_base)
        )
    assert p2.returncode == 0, p2.stdout + p2.stderr
    err = p2.stderr.splitlines()
    assert err[0].startswith(f"ktui: resuming session {sid} (started ")
    assert err[0].endswith(" records, 5 messages go back to the model")
    assert "ktui: its last run ended: done" in err and f"ktui: appending to session {sid}" in err
    assert p2.stdout.startswith("> and now?\nassistant: Picking up where we left off.\n")
    sent = llm2.requests[0]["messages"]
    assert sent[1:6] == llm1.requests[1]["messages"][1:] + [
        {"role": "assistant", "content": "v4 is written; run it when you like."}
    ]
    assert sent[6] == {"role": "user", "content": "and now?"}
    assert [p.name for p in (ws.root / "sessions").iterdir()] == [sid]
    log = read_log(folder)
    assert log.problems == [] and [r.seq for r in log.records] == list(range(len(log.records)))
    (resumed,) = [r for r in log.records if r.type == "resumed"]
    assert resumed.data["command"] == "agent" and resumed.data["argv"][:3] == ["ktui", "agent", "--resume"]
    p3 = _ktui("sessions", "--workspace", str(ws.root), "--json", env=_cli_env())
    rows = data_of(p3.stdout, "sessions")["sessions"]
    assert [(r["id"], r["ended"]) for r in rows] == [(sid, True)]


def test_cli_resume_errors_are_usage_errors_with_their_message(make_ws):
    ws = make_ws(["vector_add"])
    rec = Recorder(ws, "tui", ["ktui"])
    rec.close()
    base = ["--model", "openai/scripted", "--workspace", str(ws.root)]
    p = _ktui("agent", "vector_add", "--resume", "nope", "-m", "x", *base, env=_cli_env())
    assert p.returncode == 2
    assert p.stderr.startswith(f"ktui: error: no session 'nope' in {ws.root / 'sessions'} (sessions: {rec.id};")
    p = _ktui("agent", "vector_add", "--resume", rec.id, "--no-record", "-m", "x", *base, env=_cli_env())
    assert (p.returncode, p.stderr) == (
        2,
        "ktui: error: --resume appends to the session's log: it does not go with --no-record\n",
    )
    p = _ktui("agent", "--resume", rec.id, "-m", "x", *base, env=_cli_env())  # a session that ran no problem
    assert (p.returncode, p.stderr.splitlines()[-1]) == (
        2,
        f"ktui: error: give PROBLEM (session {rec.id} ran no problem to take it from; problems: vector_add)",
    )
    other = make_ws(["vector_add"], name="other")
    shutil.copytree(rec.dir, other.root / "sessions" / rec.id)
    p = _ktui(str(other.root), "--resume", rec.id, env=_cli_env())  # ktui --resume (the TUI), no terminal needed
    assert p.returncode == 2 and p.stderr == (
        f"ktui: error: session {rec.id} was recorded in the workspace {ws.root}, not in {other.root}: resume it "
        f"there (`ktui {ws.root} --resume {rec.id}`)\n"
    )
    assert [x.name for x in (other.root / "sessions").iterdir()] == [rec.id]  # nothing new made


# -- the TUI -------------------------------------------------------------------------------------------------------
@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_the_chat_pane_shows_the_earlier_chat_after_resume(make_ws):
    from textual.widgets import Markdown

    from ktui.tui.app import KtuiApp
    from ktui.tui.chat import ChatPane

    ws = make_ws(["vector_add"])
    rec, _, _ = converse(ws, list(FIRST), ["make it faster"])
    (ws.root / "kernels/vector_add/v1.py").write_text("# changed by me\n")
    v1 = ws.root / "kernels/vector_add/v1.py"
    converse(
        ws,
        [Reply("noted")],
        ["one more"],
        resume=prepare(ws.root, rec.id),
        after=lambda bus: bus.publish(FileChanged(path=str(v1))),
    )
    v1.write_text("# changed again\n")
    plan = prepare(ws.root, rec.id)
    app = KtuiApp(ws, start_session=False, agent_config=AgentConfig(model="openai/scripted"), resume=plan)
    async with app.run_test(size=(120, 40)) as pilot:
        chat = app.query_one(ChatPane)
        end = "── resumed: new messages continue this conversation ──"
        for _ in range(400):  # (the history is drawn after the first refresh: wait for its last line)
            if any(str(w.render()) == end for w in chat.query(".chat-line")):
                break
            await pilot.pause(0.05)
        users = [str(w.render()) for w in chat.query(".chat-user")]
        assert users == ["you make it faster", "you one more"]
        replies = [m.source for m in chat.query(Markdown)]
        assert replies == [
            "Writing v4 and reading the reference.",
            "v4 is written; run it when you like.",
            "noted",
        ]
        lines = [str(w.render()) for w in chat.query(".chat-line")]
        assert lines[0] == f"── session {rec.id}, as recorded ──"
        assert "⚙ write_kernel(vector_add/v4) wrote kernels/vector_add/v4.py" in lines
        assert any(ln.startswith("⚙ read_file(path='references/vector_add.py')") for ln in lines)
        (check,) = plan.versions
        assert check.line() in lines and check.path == "kernels/vector_add/v1.py", lines
        assert lines[-1] == end
        assert app.resume is plan


@pytest.mark.anyio
async def test_ktui_resume_in_the_tui_sends_the_earlier_chat_and_appends_to_the_log(make_ws):
    """The app's own path (``ktui --resume``): the recorder appends to the session's log, the chat pane's agent
    starts with the recorded history, and a message typed in the chat reaches the model after it."""
    from textual.widgets import Input

    from ktui.core.ladder import LadderOptions
    from ktui.core.session import Session
    from ktui.tui.app import KtuiApp
    from ktui.tui.chat import ChatPane

    ws = make_ws(["vector_add"])
    (ws.root / "ktui.toml").write_text('[tui]\nstale = "mark"\n')  # (no ladder runs on start)
    rec, llm1, agent1 = converse(ws, list(FIRST), ["make it faster"])
    plan = prepare(ws.root, rec.id)
    session = Session(ws, "cpu", options=LadderOptions(seeds=1), watch=False)
    try:
        with ScriptedLLM([Reply("Back again.")]) as llm:
            config = AgentConfig(model="openai/scripted", api_base=llm.api_base, context_tokens=32768, max_rounds=0)
            app = KtuiApp(ws, session=session, agent_config=config, record=True, resume=plan)
            async with app.run_test(size=(120, 40)) as pilot:
                chat = app.query_one(ChatPane)
                for _ in range(1200):
                    if chat.agent is not None:
                        break
                    await pilot.pause(0.05)
                assert chat.agent is not None and chat.agent.history == agent1.history
                assert app.recorder is not None and app.recorder.id == rec.id
                box = app.query_one("#chat-input", Input)
                box.focus()
                box.value = "and in the TUI?"
                await pilot.press("enter")
                for _ in range(1200):
                    if llm.requests and not chat.busy:
                        break
                    await pilot.pause(0.05)
            sent = llm.requests[0]["messages"]
    finally:
        session.stop()
    assert sent[1:] == [*agent1.history, {"role": "user", "content": "and in the TUI?"}]
    assert sent[1:6] == llm1.requests[1]["messages"][1:] + [sent[5]]
    log = read_log(rec.dir)
    assert log.problems == [] and [r.seq for r in log.records] == list(range(len(log.records)))
    (resumed,) = [r for r in log.records if r.type == "resumed"]
    assert resumed.data["command"] == "tui" and log.ended and log.records[-1].data["reason"] == "done"
    state = fold(log.records)
    assert [e.event.text for e in state.chat if isinstance(e.event, ChatReplyDone)][-1] == "Back again."
    assert len(catalog(ws.root)) == 1
