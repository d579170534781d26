"""The event vocabulary: every registered kind (the core's and the agent's) round-trips through JSON, the state words
are closed sets, and the bus turns a broken subscriber into a Notice and a log line instead of a print."""

from __future__ import annotations

import dataclasses
import json
import logging
import types
import typing

import pytest

import ktui.agent.events as agent_events
import ktui.core.events as core_events
from ktui.core.events import Event, EventBus, LadderFinished, Notice, RungFinished, WorkerState
from ktui.core.log import close_log, log_path, open_log
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status


def rung_result() -> RungResult:
    return RungResult(
        "correctness",
        Status.FAILED,
        0.25,
        "spec=(129,) seed=12: 1 element unwritten",
        {"specs": [{"label": "(129,)", "ok": False, "worst_index": [128], "psnr_db": 40.5}]},
        error=ErrorInfo("CorrectnessError", "1 element unwritten at [128]", "Traceback ...\n"),
        warnings=["slow host path"],
    )


def ladder_result() -> LadderResult:
    return LadderResult(
        "vector_add",
        "v2",
        "kernels/vector_add/v2.py",
        {"type": "cpu", "interpreter": True},
        [
            RungResult(
                "compile",
                Status.OK,
                0.5,
                "triton: add_kernel(w=4,s=3)",
                {"launches": [{"kernel": "add_kernel", "num_warps": 4}]},
            ),
            rung_result(),
        ],
        source_sha256="ab" * 32,
        reference_sha256="cd" * 32,
        started_at=1700000000.5,
        seconds=2.5,
    )


def sample(tp):
    """A value of annotated type ``tp`` (the first word of a Literal, a non-empty tuple, a nested result...)."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return typing.get_args(tp)[-1]
    if origin in (typing.Union, types.UnionType):
        return sample(next(a for a in typing.get_args(tp) if a is not type(None)))
    if origin is tuple:
        return (sample(typing.get_args(tp)[0]), sample(typing.get_args(tp)[0]))
    return {
        str: "some text",
        int: 37,
        float: 0.125,
        bool: True,
        RungResult: rung_result(),
        LadderResult: ladder_result(),
    }[tp]


def every_event() -> list[Event]:
    out = []
    for _kind, cls in sorted(Event.kinds().items()):
        if cls.__module__ not in (core_events.__name__, agent_events.__name__):
            continue  # events declared by other tests
        hints = typing.get_type_hints(cls)
        out.append(
            cls(**{f.name: sample(hints[f.name]) for f in dataclasses.fields(cls) if f.name != "at"}, at=1700000000.25)
        )
    return out


def test_every_kind_is_registered_by_its_name_core_and_agent_alike():
    kinds = Event.kinds()
    for name in (
        "FileChanged",
        "ResultStored",
        "QueueChanged",
        "LadderStarted",
        "RungStarted",
        "RungProgress",
        "RungFinished",
        "LadderFinished",
        "WorkerState",
        "Notice",
        "ChatMessage",
        "ChatDelta",
        "ChatReplyDone",
        "ChatReplyReset",
        "ToolCall",
        "ApprovalRequest",
        "ApprovalDecided",
        "AgentNotice",
        "AgentState",
    ):
        assert name in kinds, name
    assert "ToolCallEvent" not in kinds
    assert kinds["ToolCall"] is agent_events.ToolCall
    assert set(agent_events.AGENT_EVENTS) == {c for c in kinds.values() if c.__module__ == agent_events.__name__}
    # the core's module declares no agent vocabulary
    assert not hasattr(core_events, "ChatMessage") and not hasattr(core_events, "ToolCallEvent")


@pytest.mark.parametrize("event", every_event(), ids=lambda e: e.kind)
def test_every_event_round_trips_through_json(event):
    d = json.loads(json.dumps(event.to_json()))
    assert d["event"] == event.kind and d["at"] == 1700000000.25
    back = Event.from_json(d)
    assert type(back) is type(event)
    assert back == event
    assert type(event).from_json(d) == event  # from the class itself too


def test_nested_results_and_tuples_come_back_as_themselves():
    ev = LadderFinished(key="vector_add/v2", run_id=3, result=ladder_result())
    back = Event.from_json(json.loads(json.dumps(ev.to_json())))
    assert isinstance(back.result, LadderResult) and back.result.rungs[1].status is Status.FAILED
    assert back.result.rungs[1].error.type == "CorrectnessError"
    assert back.result.failed_rung.figures["specs"][0]["worst_index"] == [128]
    rung = Event.from_json(RungFinished(key="k", run_id=1, result=rung_result()).to_json())
    assert rung.result == rung_result()
    started = Event.from_json(
        json.loads(
            json.dumps(
                core_events.LadderStarted(key="k", run_id=1, source_sha256="ab", rungs=("compile", "run")).to_json()
            )
        )
    )
    assert started.rungs == ("compile", "run")


def test_unknown_and_mismatched_kinds_are_refused():
    with pytest.raises(KeyError, match="unknown event kind 'NoSuchEvent'"):
        Event.from_json({"event": "NoSuchEvent"})
    with pytest.raises(TypeError):
        Notice.from_json(WorkerState(role="judge", state="ready").to_json())
    with pytest.raises(TypeError, match="two events named Notice"):
        type("Notice", (Event,), {"__module__": "somewhere.else"})


def test_state_words_are_closed_sets():
    def words(cls, name):
        return set(typing.get_args(typing.get_type_hints(cls)[name]))

    assert words(WorkerState, "state") == {"starting", "ready", "restarting", "failed", "stopped"}
    assert words(Notice, "level") == {"info", "warning", "error"}
    assert words(agent_events.AgentNotice, "level") == {"info", "warning", "error"}
    assert words(agent_events.ToolCall, "state") == {"running", "done", "error"}
    assert words(agent_events.AgentState, "state") == {"idle", "thinking", "tool", "approval", "ladder", "stopped"}
    assert words(agent_events.ChatMessage, "role") == {"user", "assistant", "results"}


def test_a_broken_subscriber_becomes_one_notice_and_a_log_line_and_the_others_still_hear(tmp_path, capfd):
    handler = open_log(tmp_path)
    try:
        bus = EventBus()
        heard: list[Event] = []

        def broken(ev: Event) -> None:
            if isinstance(ev, WorkerState):
                raise ValueError("the view broke")

        bus.subscribe(broken)
        bus.subscribe(heard.append)
        for _ in range(3):
            bus.publish(WorkerState(role="judge", state="ready"))
        bus.publish(Notice(level="info", message="still here"))
    finally:
        close_log(handler)
    states = [e for e in heard if isinstance(e, WorkerState)]
    notices = [e for e in heard if isinstance(e, Notice)]
    assert len(states) == 3  # the broken subscriber stopped nobody
    assert [n.level for n in notices] == ["error", "info"]  # once per subscriber and kind
    assert "broken failed on WorkerState: ValueError: the view broke" in notices[0].message
    log = log_path(tmp_path).read_text()
    assert log.count("failed on WorkerState") == 1 and "ValueError: the view broke" in log and "Traceback" in log
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # nothing printed over the screen


def test_without_a_log_nothing_reaches_stderr(capfd):
    bus = EventBus()
    bus.subscribe(lambda ev: 1 / 0)
    bus.publish(Notice(level="info", message="x"))
    assert capfd.readouterr().err == ""
    assert logging.getLogger("ktui").handlers  # the NullHandler keeps logging's last resort quiet
